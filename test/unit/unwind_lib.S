/* Loaded by test/unit/test_unwind.cpp in two builds whose one function
 * calls back at the same offset under different frame rules (NB_VARIANT 1:
 * CFA from rbp; 2: CFA = rsp + 64), dlopen'ed one after the other at the
 * same address: once the first is unloaded, its cached rules must not be
 * used for the second. */
  .text
  .globl nb_unwind_lib_call
  .type nb_unwind_lib_call, @function
nb_unwind_lib_call:   /* void (void (*f)(void*), void* arg) */
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
#if NB_VARIANT == 1
  mov %rsp, %rbp
  .cfi_def_cfa_register %rbp
  sub $32, %rsp
#else
  sub $48, %rsp
  .cfi_def_cfa_offset 64
  nop
  nop
  nop
#endif
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
#if NB_VARIANT == 1
  leave
  .cfi_def_cfa %rsp, 8
#else
  add $48, %rsp
  .cfi_def_cfa_offset 16
  pop %rbp
  .cfi_def_cfa_offset 8
#endif
  ret
  .cfi_endproc
  .size nb_unwind_lib_call, .-nb_unwind_lib_call
  .section .note.GNU-stack, "", @progbits
