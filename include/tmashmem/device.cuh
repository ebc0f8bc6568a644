// tmashmem device API: the umbrella header. Include it in any CUDA translation unit
// (no relocatable device code needed) and take the context by value:
//
//   #include <tmashmem/device.cuh>
//   __global__ void kernel(const __grid_constant__ tmashmem_ctx_t ctx, float* x) {
//     tmashmem::put_signal_block(ctx, x, local, bytes, sig, 1, tmashmem::SignalOp::Set, peer);
//   }
//
// One concept per header; each states its memory-ordering contract at the top. The PTX
// instructions are wrapped once, in tmashmem/device/detail/ (internal).
#pragma once

#include "tmashmem/ctx.h"
#include "tmashmem/device/atomic.cuh"
#include "tmashmem/device/barrier.cuh"
#include "tmashmem/device/collectives/all.cuh"
#include "tmashmem/device/bulk.cuh"
#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/multicast.cuh"
#include "tmashmem/device/order.cuh"
#include "tmashmem/device/rma.cuh"
#include "tmashmem/device/signal.cuh"
#include "tmashmem/device/signal_pad.h"
#include "tmashmem/device/status.cuh"
#include "tmashmem/device/tile.cuh"
#include "tmashmem/device/tile_put_multicast.cuh"
