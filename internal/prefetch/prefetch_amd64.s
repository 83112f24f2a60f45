#include "textflag.h"

// func Lines(p unsafe.Pointer, n int)
TEXT ·Lines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	JMP  prefetchLoop<>(SB)

// func LinesFrom(p unsafe.Pointer, from, n int)
TEXT ·LinesFrom(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), AX
	MOVQ from+8(FP), BX
	SHLQ $6, BX
	ADDQ BX, AX
	MOVQ n+16(FP), CX
	JMP  prefetchLoop<>(SB)

// prefetchLoop asks for CX lines from AX on.
TEXT prefetchLoop<>(SB), NOSPLIT|NOFRAME, $0
	TESTQ CX, CX
	JLE   done
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ  loop
done:
	RET
