// The collective building blocks (docs/collectives.md): CTA-level steps that a kernel
// runs on the SMs it chooses, between its own work, synchronised by per-slot epoch
// signals (state.cuh, sync.cuh, exchange.cuh). The on-stream collectives
// (tmashmem/collectives.h) are kernels made of these.
#pragma once

#include "tmashmem/device/collectives/allgather.cuh"
#include "tmashmem/device/collectives/allreduce.cuh"
#include "tmashmem/device/collectives/alltoall.cuh"
#include "tmashmem/device/collectives/broadcast.cuh"
#include "tmashmem/device/collectives/copy.cuh"
#include "tmashmem/device/collectives/exchange.cuh"
#include "tmashmem/device/collectives/low_latency.cuh"
#include "tmashmem/device/collectives/reduce_math.cuh"
#include "tmashmem/device/collectives/reduce_scatter.cuh"
#include "tmashmem/device/collectives/staged.cuh"
#include "tmashmem/device/collectives/state.cuh"
#include "tmashmem/device/collectives/sync.cuh"
#include "tmashmem/device/collectives/tile.cuh"
