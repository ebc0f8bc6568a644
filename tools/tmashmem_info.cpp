// tmashmem-info: version, build options, every setting with its value and help,
// and each visible CUDA device with the attributes the runtime depends on.
// Usage: tmashmem-info [-a | --markdown]
//   -a: also the peer-access matrix; --markdown: only the settings table README.md carries
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "runtime/config.h"
#include "runtime/driver.h"
#include "runtime/multicast_gate.h"
#include "tmashmem/tmashmem.h"

using namespace tmashmem;

namespace {

int attribute(CUdevice dev, CUdevice_attribute a) {
  int v = -1;
  if (driver().cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS) return -1;
  return v;
}

void print_devices(const Config& config, bool all) {
  tmashmem_status_t st = load_driver();
  if (st != TMASHMEM_SUCCESS) {
    std::printf("Devices:\n  none: %s\n", tmashmem_last_error());
    return;
  }
  int version = 0, count = 0;
  driver().cuDriverGetVersion(&version);
  driver().cuDeviceGetCount(&count);
  std::printf("Driver:\n  %s, CUDA driver API %d.%d\n", driver().origin, version / 1000,
              (version % 1000) / 10);
  std::printf("Devices: %d\n", count);
  std::printf("  selection: the device current at tmashmem_init, else node-local rank %% %d\n",
              count);
  for (int d = 0; d < count; ++d) {
    CUdevice dev = 0;
    driver().cuDeviceGet(&dev, d);
    char name[128] = {0};
    driver().cuDeviceGetName(name, sizeof name - 1, dev);
    size_t total = 0;
    driver().cuDeviceTotalMem(&total, dev);
    int mc = attribute(dev, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED);
    std::string why;
    multicast_allowed(config, mc == 1, &why, driver().missing_multicast_entry() == nullptr);
    std::printf("  [%d] %s, sm_%d%d, %d SMs, %.1f GiB\n", d, name,
                attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
                attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                static_cast<double>(total) / (1u << 30));
    std::printf(
        "      VMM %d, POSIX fd handles %d, fabric handles %d, multicast %d, cluster launch %d\n",
        attribute(dev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
        attribute(dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED),
        attribute(dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED), mc,
        attribute(dev, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH));
    std::printf("      multicast for tmashmem: %s\n", why.c_str());
  }
  if (!all || count < 1) return;
  std::printf("Peer access (row can load/store column):\n     ");
  for (int j = 0; j < count; ++j) std::printf(" %3d", j);
  std::printf("\n");
  for (int i = 0; i < count; ++i) {
    std::printf("  %3d", i);
    for (int j = 0; j < count; ++j) {
      int can = 0;
      CUdevice a = 0, b = 0;
      driver().cuDeviceGet(&a, i);
      driver().cuDeviceGet(&b, j);
      if (i == j)
        can = 1;
      else
        driver().cuDeviceCanAccessPeer(&can, a, b);
      std::printf(" %3s", can ? "yes" : "no");
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool all = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "-a") || !std::strcmp(argv[i], "--all")) {
      all = true;
    } else if (!std::strcmp(argv[i], "--markdown")) {
      std::fputs(settings_markdown().c_str(), stdout);
      return 0;
    } else {
      std::fprintf(stderr, "usage: %s [-a | --markdown]\n", argv[0]);
      return 2;
    }
  }
  std::printf("tmashmem %d.%d.%d\n", TMASHMEM_VERSION_MAJOR, TMASHMEM_VERSION_MINOR,
              TMASHMEM_VERSION_PATCH);
  std::printf("Build:\n  MPI bootstrap: %s\n  CUDA headers: %d.%d (driver ABI resolved at %d)\n",
              bootstrap_has_mpi() ? "yes" : "no", CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10,
              kDriverAbiVersion);
  std::printf("  NCCL bootstrap: %s\nBootstrap: %s\n", bootstrap_has_nccl() ? "yes" : "no",
              tmashmem_bootstrap_choice());
  Config config;
  bool config_ok = load_config(nullptr, &config) == TMASHMEM_SUCCESS;
  std::printf("Settings (environment; tmashmem_init_attr overrides):\n");
  for (const SettingInfo& s : settings()) {
    std::string value = setting_value(s.name);
    std::printf("  %-30s = %-10s (default %s)%s\n      %s\n", s.name,
                value.empty() ? s.default_value : value.c_str(), s.default_value,
                s.scope == Scope::Job ? " [same on every PE]" : "", s.help);
    // An unset or empty variable takes the default; anything else must parse.
    if (!value.empty() && !s.valid(value.c_str()))
      std::printf("      INVALID: \"%s\" is not %s; tmashmem_init would fail\n", value.c_str(),
                  s.expected().c_str());
  }
  if (!config_ok) std::printf("  ERROR: %s\n", tmashmem_last_error());
  print_devices(config, all);
  return config_ok ? 0 : 1;
}
