// The base of the runtime's owners of a resource (a socket, a VA window, a multicast
// object, a current context): one copy only, released once by its destructor.
#pragma once

namespace tmashmem {

class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace tmashmem
