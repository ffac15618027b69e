// Op constructors for Scope, mirroring TensorFlow's C++ `ops::` namespace.
//
//   Scope root = Scope::NewRootScope();
//   auto a = ops::Const(root, Tensor::FromVector<float>({1, 2}));
//   auto b = ops::Add(root.WithOpName("sum"), a, a);
#pragma once

#include "blocks/basic/basic_ops.h"
#include "blocks/conv/conv_ops.h"
