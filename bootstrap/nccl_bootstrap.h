// The NCCL bootstrap: the PEs are the ranks of an existing ncclComm_t (the user's;
// never destroyed or aborted here).
//
// NCCL moves only device bytes, so every exchange stages its records in a small
// device buffer on the communicator's GPU: copy in, ncclAllGather / ncclBroadcast on
// a private stream, poll the stream with cudaStreamQuery against the deadline, copy
// out. The barrier is a one-word ncclAllReduce. On expiry the call returns
// TMASHMEM_ERROR_TIMEOUT naming the step; NCCL cannot say which rank is missing, and
// whether to abort the communicator (ncclCommAbort) is the user's decision. The
// staging buffer and stream of a timed-out bootstrap are then left alone, since the
// stuck collective may still write them. The caller's current CUDA device is
// restored after every call.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"

namespace tmashmem {

tmashmem_status_t make_nccl_bootstrap(const BootstrapOptions& options,
                                      std::unique_ptr<Bootstrap>* out, std::string* message);

}  // namespace tmashmem
