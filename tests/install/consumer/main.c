/* Links against the installed libsieve and checks the version it reports. */
#include <sieve.h>
#include <stdio.h>

int main(void) {
  int version = 0;
  if (sieveGetVersion(&version) != sieveSuccess || version != SIEVE_VERSION_CODE) {
    fprintf(stderr, "version mismatch: %d vs %d\n", version, SIEVE_VERSION_CODE);
    return 1;
  }
  printf("installed sieve %d works\n", version);
  return 0;
}
