#include "rollout/malloc_tuning.h"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace allot::rollout {

bool KeepFreedMemoryForReuse(int max_arenas) {
#if defined(__GLIBC__)
  static std::once_flag once;
  static bool applied = false;
  std::call_once(once, [max_arenas] {
    // Blocks below 32 MiB (glibc's own ceiling for its dynamic threshold) come from the heap;
    // up to 512 MiB of free heap is kept before trimming; heaps grow 16 MiB at a time.
    const bool mmap = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
    const bool trim = mallopt(M_TRIM_THRESHOLD, 512 << 20) == 1;
    const bool pad = mallopt(M_TOP_PAD, 16 << 20) == 1;
    const bool arenas = max_arenas < 1 || mallopt(M_ARENA_MAX, max_arenas) == 1;
    applied = mmap && trim && pad && arenas;
  });
  return applied;
#else
  (void)max_arenas;
  return false;
#endif
}

}  // namespace allot::rollout
