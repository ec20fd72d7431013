#include "tensor/tensor.h"

namespace herd {

std::string TensorView::ShapeString() const {
  int n = 4;
  while (n > 1 && ne[n - 1] == 1) --n;
  std::string s = "[";
  for (int i = n - 1; i >= 0; --i) {
    s += std::to_string(ne[i]);
    if (i > 0) s += ", ";
  }
  return s + "]";
}

}  // namespace herd
