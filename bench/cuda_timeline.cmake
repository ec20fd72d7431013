# Kernel timeline on the GPU machine (bench/cuda/kernel_timeline.cc, a CUDA injection library on
# CUPTI; bench/cuda/timeline.sh runs a command under it and summarises the decode steps).
if(HERD_HAVE_CUDA AND TARGET CUDA::cupti)
  add_library(herd_kernel_timeline SHARED ${CMAKE_CURRENT_LIST_DIR}/cuda/kernel_timeline.cc)
  target_link_libraries(herd_kernel_timeline PRIVATE CUDA::cupti)
  set_target_properties(herd_kernel_timeline PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endif()
