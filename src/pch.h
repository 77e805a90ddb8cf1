// Precompiled header: the LibTorch headers every translation unit needs. Keep this to
// external, rarely-changing headers; project headers do not belong here.
#pragma once
#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
