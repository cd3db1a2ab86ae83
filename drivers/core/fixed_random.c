/*
 * The fixed stream of `--deterministic`: the bytes an adapter hands its library in place of
 * the system's randomness, so that every run of a scenario draws the same values and does
 * the same work (instruction mode counts that work, and two runs must agree).
 *
 * splitmix64 from a constant state: the bytes only need to look random to the library
 * (no fixed point, no repeated block, keys and nonces within range), not to be secret.
 */
#include <stdint.h>
#include <string.h>

#include "core.h"

static uint64_t state = 0x746c7362656e6368ull; /* "tlsbench" */

void tb_fixed_random(unsigned char *out, size_t len) {
  while (len > 0) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    size_t n = len < sizeof(z) ? len : sizeof(z);
    memcpy(out, &z, n);
    out += n;
    len -= n;
  }
}
