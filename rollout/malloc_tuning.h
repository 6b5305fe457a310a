// Keeps freed heap memory in the process instead of handing it back to the kernel.
//
// Streaming trajectories allocates and frees buffers of tens of KiB to a few MiB at a high rate
// (gRPC read slices, serialized messages, parsed token arrays). With glibc's defaults, freed
// memory at the top of a heap is returned (trim) and large blocks are mmap'd per allocation, so
// the next buffer faults in fresh zeroed pages: on the 8k-token ingest benchmark that cost more
// CPU than the copies themselves (about 20 page faults per trajectory, most of the system
// time). Raising the trim and mmap thresholds makes the allocator reuse those pages.
//
// Per-thread malloc arenas made it worse: buffers allocated on a gRPC or episode thread and
// freed on another kept faulting in fresh pages (glibc.malloc.arena_max=1 halved the page faults
// and cut the benchmark's CPU time by about a third), so the number of arenas is capped too;
// small allocations still go through each thread's lock-free cache.
//
// Process-wide, so only a process's main() decides (apps/, per process kind): a rollout worker
// caps arenas at 1; a learner, where LibTorch's threads allocate too, keeps glibc's arenas.
// The first call wins. A no-op where the C library has no mallopt (non-glibc).
#pragma once

namespace allot::rollout {

// Returns true when the settings were applied (first call) or had been applied before.
// `max_arenas` >= 1 caps glibc's malloc arenas; 0 leaves their number to glibc.
bool KeepFreedMemoryForReuse(int max_arenas);

}  // namespace allot::rollout
