from numba import types
from numba.extending import intrinsic
from llvmlite import ir

@intrinsic
def rdtsc(typingctx):
    sig = types.int64()
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = builder.module.declare_intrinsic("llvm.readcyclecounter", fnty=fnty)
        return builder.call(fn, [])
    return sig, codegen
