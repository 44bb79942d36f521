// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), as
// LevelDB's port/thread_annotations.h: they state which mutex guards which member and which
// functions need it held. Clang checks them (-Wthread-safety, an error in clang builds); other
// compilers see nothing.
#pragma once

#if defined(__clang__)
#define CAIRN_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define CAIRN_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) CAIRN_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY CAIRN_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) CAIRN_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) CAIRN_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) CAIRN_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) CAIRN_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) CAIRN_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) CAIRN_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) CAIRN_THREAD_ANNOTATION(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS CAIRN_THREAD_ANNOTATION(no_thread_safety_analysis)
