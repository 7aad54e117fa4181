#pragma once
// Include first in tests that use libtorch. Debian's libtorch pulls in glog, whose
// CHECK/CHECK_EQ/... macros would silently replace doctest's (a failing check would
// abort instead of being reported). Load glog first, drop its macros, then doctest.
#include <ATen/ATen.h>

#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LE
#undef CHECK_LT
#undef CHECK_GE
#undef CHECK_GT

#include <doctest/doctest.h>
