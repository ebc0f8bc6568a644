// The symmetric heap's offset allocator: alignment, reuse, coalescing,
// fragmentation, exhaustion, and that identical call sequences give identical
// offsets (the property that makes allocations symmetric).
#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime/allocator.h"

using tmashmem::OffsetAllocator;

TEST_CASE("allocator: alignment is honoured for every power of two") {
  OffsetAllocator a(size_t(1) << 30);
  auto rng = tmashmem_test::make_rng();
  for (int i = 0; i < 500; ++i) {
    size_t alignment = size_t(1) << (rng() % 21);
    size_t size = 1 + rng() % 100000;
    size_t offset = 0;
    REQUIRE(a.allocate(size, alignment, &offset));
    CHECK(offset % alignment == 0);
  }
}

TEST_CASE("allocator: blocks never overlap and stay inside the capacity") {
  const size_t capacity = size_t(64) << 20;
  OffsetAllocator a(capacity);
  auto rng = tmashmem_test::make_rng(1);
  std::map<size_t, size_t> live;
  for (int step = 0; step < 5000; ++step) {
    if (!live.empty() && rng() % 3 == 0) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      size_t size = 0;
      REQUIRE(a.release(it->first, &size));
      CHECK(size == it->second);
      live.erase(it);
    } else {
      size_t size = 1 + rng() % (size_t(1) << 18);
      size_t offset = 0;
      if (!a.allocate(size, 256, &offset)) continue;
      CHECK(offset + size <= capacity);
      auto next = live.lower_bound(offset);
      if (next != live.end()) CHECK(offset + size <= next->first);
      if (next != live.begin()) {
        auto prev = std::prev(next);
        CHECK(prev->first + prev->second <= offset);
      }
      live[offset] = size;
    }
  }
  size_t in_use = 0;
  for (auto& b : live) in_use += b.second;
  CHECK(a.bytes_in_use() == in_use);
  CHECK(a.live_blocks() == live.size());
}

TEST_CASE("allocator: freed neighbours coalesce back into one range") {
  OffsetAllocator a(4096 * 4);
  size_t o[4];
  for (auto& x : o) REQUIRE(a.allocate(4096, 256, &x));
  size_t extra = 0;
  CHECK_FALSE(a.allocate(1, 1, &extra));  // exhausted
  REQUIRE(a.release(o[1]));
  REQUIRE(a.release(o[3]));
  CHECK(a.largest_free() == 4096);  // fragmented: two separate 4 KiB holes
  CHECK_FALSE(a.allocate(8192, 256, &extra));
  REQUIRE(a.release(o[2]));  // joins both holes
  CHECK(a.largest_free() == 3 * 4096);
  REQUIRE(a.allocate(3 * 4096, 256, &extra));
  CHECK(extra == o[1]);
}

TEST_CASE("allocator: releasing an unknown or interior offset changes nothing") {
  OffsetAllocator a(1 << 20);
  size_t offset = 0;
  REQUIRE(a.allocate(1000, 256, &offset));
  CHECK_FALSE(a.release(offset + 8));
  CHECK_FALSE(a.release(offset + 4096));
  CHECK(a.bytes_in_use() == 1000);
  CHECK(a.release(offset));
  CHECK_FALSE(a.release(offset));  // double free
  CHECK(a.bytes_in_use() == 0);
}

TEST_CASE("allocator: lowest fit keeps the high-water mark low") {
  OffsetAllocator a(size_t(1) << 30);
  size_t first = 0, second = 0, third = 0;
  REQUIRE(a.allocate(1 << 20, 256, &first));
  REQUIRE(a.allocate(1 << 20, 256, &second));
  REQUIRE(a.release(first));
  REQUIRE(a.allocate(1 << 19, 256, &third));
  CHECK(third == first);
  CHECK(a.high_water() == second + (1 << 20));
  REQUIRE(a.release(second));
  CHECK(a.high_water() == third + (1 << 19));
}

TEST_CASE("allocator: the same calls give the same offsets (symmetry)") {
  auto rng_seed = tmashmem_test::run_seed();
  auto run = [&](std::vector<size_t>* offsets) {
    OffsetAllocator a(size_t(256) << 20);
    std::mt19937_64 rng(rng_seed);
    std::vector<size_t> live;
    for (int i = 0; i < 2000; ++i) {
      if (!live.empty() && rng() % 2) {
        size_t k = rng() % live.size();
        a.release(live[k]);
        live.erase(live.begin() + static_cast<long>(k));
      } else {
        size_t offset = 0;
        if (a.allocate(1 + rng() % 65536, size_t(1) << (rng() % 12), &offset)) {
          live.push_back(offset);
          offsets->push_back(offset);
        }
      }
    }
  };
  std::vector<size_t> a, b;
  run(&a);
  run(&b);
  CHECK(a == b);
  CHECK(a.size() > 100);
}

TEST_CASE("allocator: invalid requests are refused") {
  OffsetAllocator a(1 << 20);
  size_t offset = 0;
  CHECK_FALSE(a.allocate(0, 256, &offset));
  CHECK_FALSE(a.allocate(16, 3, &offset));  // not a power of two
  CHECK_FALSE(a.allocate(16, 0, &offset));
  CHECK_FALSE(a.allocate((1 << 20) + 1, 1, &offset));
  CHECK(a.bytes_in_use() == 0);
}
