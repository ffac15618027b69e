// Scope constructors for the convolution blocks (filled in by the conv family).
#pragma once
#include "core/scope.h"
