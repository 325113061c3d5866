// Precompiled header for core's LibTorch users: ATen only (torch/torch.h costs 2.5x the time).
#pragma once
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
