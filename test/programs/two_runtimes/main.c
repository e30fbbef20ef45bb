/* Two libraries in one process, each linked against its own CUDA runtime
 * major; prints what each one's cudaMalloc answered. */
#include <stdio.h>

void* client12(void);
void* client13(void);

int main(void) {
  printf("runtime 12 answered %p, runtime 13 answered %p\n", client12(), client13());
  return 0;
}
