// What compute-sanitizer's initcheck counts for a zero-filling cp.async (test/gpu/sanitize.py):
// a 16-byte global buffer with only its first 8 bytes written is copied into shared memory by
// one `cp.async.cg.shared.global [s], [g], 16, src-size` and read back. The PTX ISA reads
// src-size bytes and zero-fills the rest, so src-size 8 reads only initialised bytes.
//   nvcc -arch=sm_90 -o /tmp/probe test/gpu/initcheck_probe.cu
//   for s in 0 8 16; do compute-sanitizer --tool initcheck /tmp/probe $s; done
// H200, CUDA 13 (2026-12-02): src-size 0 clean; src-size 8 and 16 both report an
// "Uninitialized __global__ memory read of size 16 bytes": initcheck counts the whole chunk.
#include <cstdio>
#include <cstdlib>

__global__ void copy_chunk(const char* src, int* out, int src_size) {
  __shared__ __align__(16) char s[16];
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_size));
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  int sum = 0;
  for (int i = 0; i < 16; i++) sum += s[i];
  out[0] = sum;
}

int main(int argc, char** argv) {
  int src_size = argc > 1 ? atoi(argv[1]) : 8;
  char* src;
  int* out;
  int got = -1;
  cudaMalloc(&src, 16);
  cudaMalloc(&out, 4);
  cudaMemset(src, 1, 8);  // bytes 8..15 never written
  copy_chunk<<<1, 1>>>(src, out, src_size);
  cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost);
  int want = src_size >= 8 ? 8 : 0;  // bytes past src-size are zeros, bytes 8..15 unknown
  printf("src-size %d: sum %d (want %d)\n", src_size, got, want);
  return src_size == 16 || got == want ? 0 : 1;
}
