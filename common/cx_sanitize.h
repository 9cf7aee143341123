/*
 * cx_sanitize: what an allocator of our own tells the memory checkers, so
 * that blocks it carves out of bigger ones keep their bounds, use after
 * free and leaks visible (ASan builds: SANITIZE=1; valgrind when its
 * headers are installed). Elsewhere every macro is a no-op.
 */
#ifndef CX_SANITIZE_H
#define CX_SANITIZE_H

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define CX_ASAN           1
#define CX_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define CX_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define CX_ASAN           0
#define CX_POISON(p, n)   ((void)(p), (void)(n))
#define CX_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define CX_VALGRIND_H 1
#endif
#endif
#ifndef CX_VALGRIND_H
#define VALGRIND_MALLOCLIKE_BLOCK(a, n, rz, z) ((void)(a))
#define VALGRIND_FREELIKE_BLOCK(a, rz)         ((void)(a))
#define VALGRIND_MAKE_MEM_NOACCESS(a, n)       ((void)(a))
#define VALGRIND_MAKE_MEM_DEFINED(a, n)        ((void)(a))
#endif

#endif
