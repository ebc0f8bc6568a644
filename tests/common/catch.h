// Catch2 2.13 (Debian 12, catch2/catch.hpp) and Catch2 3 (catch2/catch_all.hpp)
// behind one include. Test programs provide no main: test_main.cpp has it.
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define TMASHMEM_CATCH3 1
#else
#include <catch2/catch.hpp>
#define TMASHMEM_CATCH3 0
#endif
