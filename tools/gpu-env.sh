# Sourced by every script here that starts PEs: the one place that keeps multicast off on the
# machines this project is lent (docs/design.md, decision 7: NVLink multicast there can take a
# shared host's GPUs out of service), in this process and in every rank it starts, and lets
# mpiexec run as root (CI and the GPU machine run as root).
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# For mpiexec: forwards the multicast switches to every rank explicitly.
TMASHMEM_MPI_ENV="-x TMASHMEM_MULTICAST -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST"
