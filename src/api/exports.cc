// libsieve's own translation unit: the library exports only sieve* symbols
// (sieve.map); everything else comes from the sieve_impl archive.
#include "sieve.h"
