// Comparing a presented credential with a secret without leaking the secret through timing.
#pragma once

#include <string_view>

namespace allot {

// True when `presented` equals `secret`. The time taken depends on the length of `secret` only:
// neither the position of the first differing byte nor the length of what the caller sent
// changes it. One function for every credential check (rollout tokens, `serve --api-key`).
bool ConstantTimeEquals(std::string_view presented, std::string_view secret);

}  // namespace allot
