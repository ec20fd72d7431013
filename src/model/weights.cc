#include "model/weights.h"

#include "io/gguf.h"
#include "kernels/quants.h"

namespace herd {
namespace {

std::string ShapeOf(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = ne.size(); i-- > 0;) s += std::to_string(ne[i]) + (i > 0 ? ", " : "");
  return s + "]";
}

}  // namespace

WeightLoader::~WeightLoader() {
  for (void* p : allocations_) backend_->Free(p);
}

bool WeightLoader::Has(const std::string& name) const { return file_.FindTensor(name) != nullptr; }

Result<TensorView> WeightLoader::HostMatrix(const std::string& name, std::vector<int64_t> ne) const {
  const GgufTensorInfo* info = file_.FindTensor(name);
  if (info == nullptr) return NotFound(StrFormat("%s: missing tensor '%s'", file_.path().c_str(), name.c_str()));
  std::vector<int64_t> got = info->ne;
  while (got.size() > 1 && got.back() == 1) got.pop_back();
  while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
  if (got != ne) {
    return InvalidArgument(StrFormat("%s: tensor '%s' has shape %s, expected %s", file_.path().c_str(), name.c_str(),
                                     ShapeOf(got).c_str(), ShapeOf(ne).c_str()));
  }
  bool supported = false;
  for (DType t : kWeightTypes) supported |= (t == info->type);
  if (!supported) {
    return Unimplemented(StrFormat("%s: tensor '%s' has type %s, which herd cannot compute with", file_.path().c_str(),
                                   name.c_str(), std::string(DTypeName(info->type)).c_str()));
  }
  return file_.View(*info);
}

Status WeightLoader::CheckPrepared(const std::string& name, const TensorView& host, const TensorView& prepared) const {
  if (prepared.data == nullptr && host.bytes() > 0) {
    return ResourceExhausted(StrFormat("%s: tensor '%s' (%zu bytes) does not fit in %s memory", file_.path().c_str(),
                                       name.c_str(), host.bytes(), backend_->name()));
  }
  return Status::Ok();
}

Result<TensorView> WeightLoader::Matrix(const std::string& name, std::vector<int64_t> ne) {
  HERD_ASSIGN_OR_RETURN(const TensorView host, HostMatrix(name, std::move(ne)));
  const TensorView prepared = backend_->PrepareWeight(host);
  HERD_RETURN_IF_ERROR(CheckPrepared(name, host, prepared));
  return prepared;
}

Result<std::vector<TensorView>> WeightLoader::MatrixGroup(const std::vector<Spec>& specs) {
  std::vector<TensorView> hosts;
  for (const Spec& s : specs) {
    HERD_ASSIGN_OR_RETURN(TensorView host, HostMatrix(s.name, s.ne));
    hosts.push_back(host);
  }
  std::vector<TensorView> prepared(hosts.size());
  backend_->PrepareWeightGroup(hosts, prepared);
  for (size_t i = 0; i < hosts.size(); ++i) HERD_RETURN_IF_ERROR(CheckPrepared(specs[i].name, hosts[i], prepared[i]));
  return prepared;
}

Result<const float*> WeightLoader::F32Vector(const std::string& name, int64_t n) {
  HERD_ASSIGN_OR_RETURN(TensorView view, Matrix(name, {n}));
  const GgufTensorInfo* info = file_.FindTensor(name);
  const TensorView host = file_.View(*info);
  if (host.type != DType::kF32 && host.type != DType::kF16 && host.type != DType::kBF16) {
    return InvalidArgument(StrFormat("%s: tensor '%s' must be F32, F16 or BF16, not %s", file_.path().c_str(),
                                     name.c_str(), std::string(DTypeName(host.type)).c_str()));
  }
  std::vector<float> values(static_cast<size_t>(n));
  ref::DequantizeRow(host.type, host.data, values.data(), n);
  void* dst = backend_->Alloc(sizeof(float) * static_cast<size_t>(n));
  backend_->CopyToDevice(dst, values.data(), sizeof(float) * values.size());
  allocations_.push_back(dst);
  (void)view;
  return static_cast<const float*>(dst);
}

}  // namespace herd
