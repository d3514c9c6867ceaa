// A plain main for the fuzz harnesses (any compiler, no libFuzzer): runs every file under the
// given corpus directories or files, then a fixed set of pseudo-random inputs (2000, or N with
// -runs=N), through LLVMFuzzerTestOneInput. Under ASan+UBSan this replays the checked-in
// corpus in CI.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void Collect(const std::string& path, std::vector<std::string>* files) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(path);
    return;
  }
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") Collect(path + "/" + name, files);
  }
  closedir(dir);
}

void Run(const std::vector<uint8_t>& bytes) {
  // A copy of exactly the input's size, so reads past it are caught.
  std::vector<uint8_t> copy(bytes);
  static uint8_t empty;  // libFuzzer passes a valid pointer even for an empty input
  LLVMFuzzerTestOneInput(copy.empty() ? &empty : copy.data(), copy.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  int generated = 2000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "-runs=", 6) == 0) {
      generated = std::atoi(argv[i] + 6);
      continue;
    }
    Collect(argv[i], &files);
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    Run(std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {}));
  }
  // Mutations of the corpus and plain random inputs, from a fixed seed.
  std::mt19937 rng(20261130);
  std::vector<std::vector<uint8_t>> seeds;
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  int runs = 0;
  for (; runs < generated; ++runs) {
    std::vector<uint8_t> b;
    if (!seeds.empty() && runs % 2 == 0) {
      b = seeds[rng() % seeds.size()];
      for (int flips = 1 + rng() % 4; flips > 0 && !b.empty(); --flips)
        b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      if (!b.empty() && rng() % 4 == 0) b.resize(rng() % b.size());
    } else {
      b.resize(rng() % 512);
      for (auto& x : b) x = static_cast<uint8_t>(rng());
    }
    Run(b);
  }
  std::printf("replayed %zu corpus files and %d generated inputs\n", files.size(), runs);
  return files.empty() ? 1 : 0;  // an empty corpus means a wrong path: fail
}
