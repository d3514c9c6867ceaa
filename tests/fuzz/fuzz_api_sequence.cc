// Sequences of API calls on 2-3 in-process ranks (api_sequence.h): init, collectives, groups,
// send/recv, masks, ternary, layouts, subnet and D2FT calls, splits, queries, deregistration,
// destroy and abort, each step consistent across ranks or perturbed on one rank or all (a
// different count, datatype, op, root or kind; an invalid enum, NULL or huge argument). Any
// broken contract (a crash, a call blocked past SIEVE_TIMEOUT + 2 s, a success with a wrong
// result or on only some ranks, a failure without a message naming the call) aborts with the
// decoded program printed.
#include <cstdio>
#include <cstdlib>

#include "fuzz/api_sequence.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sieve_fuzz::Program program = sieve_fuzz::Decode(data, size);
  std::vector<std::string> findings = sieve_fuzz::Run(program);
  if (!findings.empty()) {
    std::fprintf(stderr, "%s", sieve_fuzz::Describe(program).c_str());
    for (const std::string& f : findings) std::fprintf(stderr, "FINDING: %s\n", f.c_str());
    std::abort();
  }
  return 0;
}
