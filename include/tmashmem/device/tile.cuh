// tmashmem device API: whole tiles to and from peers through the Tensor Memory Accelerator.
//
// A tile is one box of a symmetric tensor (tmashmem/tensor.h), addressed by int32
// coordinates of its first element, innermost dimension first (TMA order), and by the PE
// whose copy of the tensor it reads or writes. Every call here is issued by ONE thread; the
// copy then runs asynchronously in the TMA unit. Kernels take the tensor's device handle,
// tmashmem_tensor_handle_t (`TensorHandle`), by value as a `const __grid_constant__` parameter.
//
// This header gathers the tile layer: tile_handle.cuh (coordinates, maps, checks),
// tile_get.cuh (get, multicast get, prefetch), tile_put.cuh (put, reduce, put + signal),
// dsmem.cuh (shared memory to another CTA of the cluster), mbarrier.cuh, smem.cuh.
//
//   __shared__ alignas(1024) uint8_t tile[BYTES];    // dynamic smem: align_smem<1024>()
//   __shared__ tmashmem::Mbarrier bar;
//   if (threadIdx.x == 0) { tmashmem::tma_acquire_tensor_maps(t); bar.init(1); }
//   __syncthreads();
//   if (threadIdx.x == 0) {
//     bar.arrive_expect_tx(t.box_bytes);
//     tmashmem::tma_get_tile(tile, t, peer, {x, y}, bar);       // peer's tile -> smem
//   }
//   if (bar.wait(0, timeout_ns) != tmashmem::Status::Ok) ...    // every thread may wait
//   ... compute on tile ...
//   tmashmem::fence_proxy_async_shared();                       // writers of tile, then
//   __syncthreads();
//   if (threadIdx.x == 0) {
//     tmashmem::tma_put_tile(t, other, {x, y}, tile);           // smem -> other's tensor
//     tmashmem::bulk_wait_group<0>();                           // written (not yet published)
//   }
//
// Contract (the memory model of docs/device-api.md, as it applies to tiles):
//  - Tensor maps. The maps live in a device table the host wrote before the launch. Per the
//    CUDA Programming Guide, a map in global memory written by the host needs a
//    fence.proxy.tensormap::generic acquire in the thread that uses it:
//    tma_acquire_tensor_maps(t) once per kernel in every thread that issues tile calls on
//    `t`, before the first one. (A map passed as a __grid_constant__ kernel parameter, e.g.
//    from tmashmem_tensor_get_map, needs no fence.) Maps never change while a tensor lives.
//  - Coordinates (seen on H200 with driver 580; a violation is an illegal-instruction
//    fault that ends the context, so debug builds check them first):
//      * the innermost coordinate must be at a 16-byte offset: c[0] * elem_bytes is a
//        multiple of 16 (negative values too; interleaved tensors are not checked);
//      * gets (and prefetches) may start anywhere else: negative coordinates and boxes
//        past the high edge read the fill value there;
//      * puts and reduces must not have a negative coordinate in any dimension; boxes past
//        the high edge (partly or wholly) are clipped there, but along dimension 0 only to
//        whole 16-byte units: when dims[0] * elem_bytes is not a multiple of 16, the bytes
//        from the row's end to the next 16-byte boundary receive the tile's contents there
//        (they are the tensor's: row padding, and the tensor's extent counts them). A tile
//        hanging over the low edge must be written as a smaller box (a second tensor view).
//  - Gets complete on an mbarrier (complete_tx). The caller announces the bytes:
//    arrive_expect_tx(t.box_bytes) per tile (before or after issuing). After the phase
//    completes, waiters see the tile in shared memory. Elements outside the tensor (partial
//    tiles, negative coordinates) are filled with zero or, with TMASHMEM_OOB_FILL_NAN, NaN;
//    box_bytes counts them too.
//  - A tile occupies t.smem_bytes of shared memory: box_bytes, except that a swizzled tile
//    whose rows are narrower than the swizzle span has each row padded to the span (the
//    padding is neither written by gets nor read by puts). Size buffers with smem_bytes,
//    announce box_bytes.
//  - Puts and reduces are bulk async stores. Each call commits its own bulk async-group, so
//    "N groups" below means "the N most recent puts/reduces of this thread":
//      bulk_wait_group_read<N>()  all but N have finished reading shared memory: their
//                                 source tiles may be overwritten;
//      bulk_wait_group<N>()       all but N have completed: their writes are performed.
//    Writes past the high edge are dropped (partial tiles are clipped). Remote visibility
//    to other PEs needs a release after completion: tma_put_tile_signal does it (through
//    signal_op), or use quiet()/fence() of the order API.
//  - A get of global memory that another thread or PE wrote with ordinary stores and
//    published with a signal needs a proxy fence between the acquire and the get:
//    fence_proxy_async_global() in the issuing thread (barrier_all already contains one).
//    docs/device-api.md, "Tiles and proxies", gives the reasoning.
//  - Shared memory written with ordinary stores and then read by a put, reduce or DSMEM copy
//    needs fence.proxy.async.shared::cta between the two. The calls fence for the issuing
//    thread's own writes; every OTHER thread that wrote the tile calls
//    fence_proxy_async_shared() before the barrier that precedes the issuing call.
//  - Alignment: tiles in shared memory 128-byte aligned; swizzled tiles aligned to the
//    swizzle pattern's repeat (256 B for 32B, 512 B for 64B, 1024 B for 128B) to get the
//    canonical layout that wgmma/CUTLASS expect. A declared __align__(1024) is not
//    guaranteed for dynamic shared memory: round the pointer with align_smem<1024>()
//    (smem.cuh). DSMEM copies: 16-byte aligned, sizes a multiple of 16.
//  - `pe` must be a load/store reachable PE of this node. Debug builds (define
//    TMASHMEM_DEVICE_DEBUG before including any tmashmem device header) check the PE, the
//    coordinate count and rules, the handle version, the dtype of a reduce and the
//    alignment, and trap after printing the PE, the call and the value; release builds
//    check nothing.
#pragma once

#include "tmashmem/device/dsmem.cuh"
#include "tmashmem/device/mbarrier.cuh"
#include "tmashmem/device/smem.cuh"
#include "tmashmem/device/tile_get.cuh"
#include "tmashmem/device/tile_handle.cuh"
#include "tmashmem/device/tile_put.cuh"
