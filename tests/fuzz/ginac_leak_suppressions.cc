// Linked into every fuzz target that reaches GiNaC. CLN (GiNaC's number library) keeps a few
// bytes of global state that LeakSanitizer reports at exit, and GiNaC leaks the node under
// construction when its own evaluation throws. allot's code refuses the inputs it can see
// coming before GiNaC does; what remains inside these two libraries is not ours to fix.
extern "C" const char* __lsan_default_suppressions() {
  // GiNaC::dynallocate is inlined from GiNaC's headers into our code, so its frames are not in
  // libginac.so.
  return "leak:libcln.so\nleak:libginac.so\nleak:GiNaC::dynallocate\n";
}
