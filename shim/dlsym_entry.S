/* dlsym, as the program sees it.
 *
 * glibc's dlsym looks at its own return address to find the calling object:
 * RTLD_NEXT means "after the caller", and RTLD_DEFAULT searches the caller's
 * local scope too. A C wrapper would make the shim the caller and break both
 * for everyone (other preloaded tools, libraries opened RTLD_LOCAL). So for
 * those two pseudo-handles this entry point *jumps* to the real dlsym, leaving
 * the caller's return address in place; only lookups on explicit handles
 * (which do not depend on the caller) go through nb_dlsym_explicit. */
#if defined(__x86_64__)
        .text
        /* One entry point under both of glibc's versions of dlsym. */
        .globl  nb_dlsym_entry
        .globl  nb_dlsym_entry_2_2_5
        .symver nb_dlsym_entry, dlsym@@GLIBC_2.34
        .symver nb_dlsym_entry_2_2_5, dlsym@GLIBC_2.2.5
        .type   nb_dlsym_entry, @function
        .type   nb_dlsym_entry_2_2_5, @function
        .p2align 4
nb_dlsym_entry:
nb_dlsym_entry_2_2_5:
        .cfi_startproc
        endbr64
        testq   %rdi, %rdi              /* RTLD_DEFAULT == 0 */
        je      1f
        cmpq    $-1, %rdi               /* RTLD_NEXT == -1 */
        je      1f
        jmp     nb_dlsym_explicit       /* hidden: a direct jump within the shim */
1:      movq    nb_real_dlsym(%rip), %rax
        testq   %rax, %rax
        je      2f
        jmp     *%rax
2:      /* First call before our constructor ran: resolve, keeping the arguments. */
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp                /* 16-byte alignment for the call */
        .cfi_adjust_cfa_offset 8
        call    nb_resolve_real_dlsym
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %rax, %rax
        je      3f
        jmp     *%rax
3:      ret                              /* no dlsym at all: NULL */
        .cfi_endproc
        .size   nb_dlsym_entry, .-nb_dlsym_entry
        .size   nb_dlsym_entry_2_2_5, .-nb_dlsym_entry_2_2_5
#else
#error "the dlsym entry point is written for x86-64 only"
#endif
        .section .note.GNU-stack,"",@progbits
