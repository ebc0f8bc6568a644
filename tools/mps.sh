# Sourced, not run: start and stop the CUDA MPS control daemon around GPU work.
# PEs that share one GPU run their kernels at once under MPS; without it they
# time-slice and every cross-PE wait costs milliseconds (docs/performance.md, "Machine").
#   mps_start   reuses a daemon that is already running; else starts one (exports
#               CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY, defaults under /tmp)
#   mps_stop    stops the daemon only if mps_start started it
# TMASHMEM_MPS=0 makes mps_start do nothing.
MPS_STARTED_HERE=${MPS_STARTED_HERE:-0}
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/tmashmem-mps-pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/tmashmem-mps-log}

mps_start() {
  [ "${TMASHMEM_MPS:-1}" = 0 ] && return 0
  command -v nvidia-cuda-mps-control >/dev/null || {
    echo "mps: nvidia-cuda-mps-control not found; PEs sharing a GPU will time-slice"
    return 0
  }
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1; then
    echo "mps: a control daemon is already running; using it"
  elif nvidia-cuda-mps-control -d; then
    MPS_STARTED_HERE=1
    sleep 1
    echo "mps: started"
  else
    echo "mps: WARNING: could not start MPS; PEs sharing a GPU will time-slice"
  fi
}

mps_stop() {
  if [ "$MPS_STARTED_HERE" = 1 ]; then
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true
    MPS_STARTED_HERE=0
    echo "mps: stopped"
  fi
}
