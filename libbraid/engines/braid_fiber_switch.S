/*
 * braid_fiber_switch.S - the x86-64 stack switches of braid_fiber.c.
 *
 *   void braid_fiber_switch(void **save, void *load);
 *
 * Push the six registers the System V ABI makes the callee keep, store
 * the stack pointer in *save, load `load`, pop the other side's six and
 * return on its stack.
 *
 * The return lands on another stack than the call came from, which a CET
 * shadow stack refuses. This file carries no GNU property note on
 * purpose: an object without one makes the linker leave SHSTK out of the
 * component's note, even when the C files are compiled with
 * -fcf-protection=full, so a process with shadow stacks on never takes
 * the component for shadow-stack safe (tests/unit/check_shstk.sh).
 */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(BRAID_FIBER_PORTABLE)
/* one side of a switch: the six registers the System V ABI makes the
 * callee keep, pushed on that side's stack (popped in reverse) */
    .macro SAVE_SIDE
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    .endm
    .macro LOAD_SIDE
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    .endm

    .text
    .p2align 4
    .globl braid_fiber_switch
    .hidden braid_fiber_switch
    .type braid_fiber_switch, @function
braid_fiber_switch:
    SAVE_SIDE
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    LOAD_SIDE
    ret
    .size braid_fiber_switch, .-braid_fiber_switch

/*
 *   void braid_fiber_call(void **save, void *top, braid_fiber_t *f);
 *
 * A job's first entry: save this side as braid_fiber_switch does, move
 * the stack pointer to `top` (16-byte aligned) and call
 * braid_fiber_run_job(f) there, then continue the side whose stack
 * pointer it returns. A job that never yields returns to the caller of
 * braid_fiber_call by a plain call/ret pair, which the processor's
 * return-stack predictor follows; one that yielded ends on whoever
 * resumed it last. The return address on the fiber's stack has no caller
 * to unwind to: its rule says so, and backtraces end there.
 */
    .p2align 4
    .globl braid_fiber_call
    .hidden braid_fiber_call
    .type braid_fiber_call, @function
braid_fiber_call:
    .cfi_startproc
    .cfi_undefined rip
    SAVE_SIDE
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    movq %rdx, %rdi
    call braid_fiber_run_job
    movq %rax, %rsp
    LOAD_SIDE
    ret
    .cfi_endproc
    .size braid_fiber_call, .-braid_fiber_call
#endif
#if defined(__ELF__)
    .section .note.GNU-stack, "", @progbits
#endif
