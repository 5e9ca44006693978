"""The registered operators that ONNX export refuses, each with the reason.

Every registered operator either has an ONNX lowering (``formats/onnx.py``) or is listed here;
``tests/formats/test_onnx_coverage.py`` fails when a new operator is in neither, so adding an
operator means deciding. "Not lowered yet" entries could be exported with a decomposition that
nobody has written; the others cannot be meaningfully exported to an inference graph.
"""
from __future__ import annotations

_OPTIMIZER = ("training-only optimizer update: it mutates the weight and its states in place, which "
              "an ONNX inference graph cannot express; export the model, not its training step")
_RANDOM = ("draws random numbers: ONNX's random operators neither follow hybridnet's generator "
           "(mx.random.seed) nor MXNet's distributions' parameterisation; apply it outside the "
           "exported graph")
_SPARSE = "works on sparse storage (row_sparse/csr), which ONNX graphs do not have"
_CONTROL_FLOW = ("control-flow operator with subgraphs: needs an ONNX If/Loop lowering of its "
                 "subgraphs, not written")
_RECORDED = ("a hybridized call as autograd.get_symbol records it (MXNet's _CachedOp): export the "
             "block itself (HybridBlock.export), whose graph holds the operators")
_CUSTOM = "runs user Python code (CustomOp), which cannot be put into an ONNX file"
_TRAINING = ("training-only: a loss, gradient hook or regulariser whose inference output is not "
             "what MXNet's exporter emits; drop it from the exported graph")
_NO_ONNX_OP = "no ONNX operator computes it (special function); not lowered"
_DYNAMIC = "its output shape depends on the input values, which the exporter's static shape plan cannot follow"
_COMPILED_ONLY = ("internal to compiled functions (oneDNN-fused convolution or linear, packed weight, layout): "
                  "export writes the traced graph, which never holds it")
_NOT_YET = "not lowered yet: ONNX can express it only as a decomposition that has not been written"
_NUMPY = ("MXNet's NumPy interface (mx.np/npx, ops/numpy_ops.py): ONNX export of np-mode graphs is not "
          "written yet (MXNet 1.9.1's exporter has no _np*_ rules either)")
_INT8 = ("MXNet's int8 quantized operator (ops/quantized_ops.py): ONNX's QuantizeLinear/QLinearConv "
         "family is not lowered to; export the float32 model")

_GROUPS: dict = {
    _INT8: (
        "_contrib_quantize_v2", "_contrib_requantize", "_contrib_quantized_conv",
        "_contrib_quantized_fully_connected", "_contrib_quantized_pooling", "_contrib_quantized_act",
        "_contrib_quantized_flatten", "_contrib_quantized_elemwise_add", "_contrib_quantized_batch_norm"),
    _OPTIMIZER: (
        "_adamw_update", "_mp_adamw_update", "_sparse_adagrad_update", "adam_update", "all_finite",
        "ftml_update", "ftrl_update", "lamb_update_phase1", "lamb_update_phase2",
        "mp_lamb_update_phase1", "mp_lamb_update_phase2", "mp_nag_mom_update", "mp_sgd_mom_update",
        "mp_sgd_update", "multi_all_finite", "multi_lars", "multi_mp_sgd_mom_update",
        "multi_mp_sgd_update", "multi_sgd_mom_update", "multi_sgd_update", "multi_sum_sq",
        "nag_mom_update", "preloaded_multi_mp_sgd_mom_update", "preloaded_multi_mp_sgd_update",
        "preloaded_multi_sgd_mom_update", "preloaded_multi_sgd_update", "reset_arrays",
        "rmsprop_update", "rmspropalex_update", "sgd_mom_update", "sgd_update", "signsgd_update",
        "signum_update"),
    _RANDOM: (
        "_random_exponential", "_random_exponential_like", "_random_gamma", "_random_gamma_like",
        "_random_generalized_negative_binomial", "_random_generalized_negative_binomial_like",
        "_random_negative_binomial", "_random_negative_binomial_like", "_random_normal",
        "_random_normal_like", "_random_poisson", "_random_poisson_like", "_random_randint",
        "_random_uniform", "_random_uniform_like", "_sample_exponential", "_sample_gamma",
        "_sample_generalized_negative_binomial", "_sample_multinomial", "_sample_negative_binomial",
        "_sample_normal", "_sample_poisson", "_sample_uniform", "_shuffle", "_sample_unique_zipfian",
        "_image_random_brightness", "_image_random_color_jitter", "_image_random_contrast",
        "_image_random_flip_left_right", "_image_random_flip_top_bottom", "_image_random_hue",
        "_image_random_lighting", "_image_random_saturation"),
    _SPARSE: ("cast_storage", "_sparse_retain", "_contrib_getnnz", "_contrib_SparseEmbedding", "_square_sum",
              "_scatter_elemwise_div", "_scatter_plus_scalar", "_scatter_minus_scalar"),
    _CONTROL_FLOW: ("_cond", "_foreach", "_while_loop"),
    _RECORDED: ("_CachedOp",),
    _CUSTOM: ("Custom",),
    _COMPILED_ONLY: ("_fused_conv", "_onednn_conv_weight", "_contiguous", "_channels_last", "_fused_linear",
                     "_onednn_linear_weight", "_batchnorm_act", "_add_act", "_act", "_int8_conv",
                     "_int8_fully_connected"),
    _TRAINING: (
        "_contrib_gradientmultiplier", "_contrib_round_ste", "_contrib_sign_ste",
        "IdentityAttachKLSparseReg", "SVMOutput", "CTCLoss", "softmax_cross_entropy",
        "_fused_softmax_ce", "amp_multicast", "_identity_with_attr_like_rhs"),
    _NO_ONNX_OP: ("erfinv", "gamma", "gammaln"),
    _DYNAMIC: ("_contrib_boolean_mask", "_histogram", "_contrib_box_nms", "_contrib_MultiBoxDetection",
               "_contrib_Proposal", "_contrib_MultiProposal", "_contrib_bipartite_matching"),
    _NOT_YET: (
        # linear algebra
        "_linalg_det", "_linalg_extractdiag", "_linalg_extracttrian", "_linalg_gelqf", "_linalg_gemm",
        "_linalg_gemm2", "_linalg_inverse", "_linalg_makediag", "_linalg_maketrian", "_linalg_potrf",
        "_linalg_potri", "_linalg_slogdet", "_linalg_sumlogdiag", "_linalg_syevd", "_linalg_syrk",
        "_linalg_trmm", "_linalg_trsm", "khatri_rao",
        # detection and sampling-grid layers
        "_contrib_MultiBoxPrior", "_contrib_MultiBoxTarget", "_contrib_PSROIPooling", "_contrib_ROIAlign",
        "_contrib_RROIAlign", "_contrib_box_decode", "_contrib_box_encode", "_contrib_box_iou",
        "_contrib_DeformableConvolution", "_contrib_DeformablePSROIPooling",
        "_contrib_ModulatedDeformableConvolution", "ROIPooling", "BilinearSampler", "GridGenerator",
        "SpatialTransformer", "Correlation", "_contrib_BilinearResize2D",
        "_contrib_AdaptiveAvgPooling2D",
        # normalisation / fused layers
        "_contrib_BatchNormWithReLU", "_contrib_SyncBatchNorm", "RNN", "_rnn_param_concat",
        "_contrib_interleaved_matmul_encdec_qk", "_contrib_interleaved_matmul_encdec_valatt",
        "_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_selfatt_valatt",
        "_contrib_div_sqrt_dim", "_contrib_quadratic", "_contrib_count_sketch", "_contrib_fft",
        "_contrib_ifft", "_contrib_quantize", "_contrib_dequantize",
        # elementwise tests and legacy layers
        "_contrib_allclose", "_contrib_isfinite", "_contrib_isinf", "_contrib_isnan",
        "Convolution_v1", "Pooling_v1", "Crop", "im2col", "col2im", "fill_element_0index",
        "_onehot_encode",
        # image operators (deterministic)
        "_image_adjust_lighting", "_image_crop", "_image_flip_left_right", "_image_flip_top_bottom",
        "_image_normalize", "_image_resize", "_image_to_tensor",
        # indexing, ordering and shape
        "_contrib_arange_like", "_contrib_index_array", "_contrib_index_copy", "_ravel_multi_index",
        "_unravel_index", "scatter_nd", "_np_cumsum", "argsort", "sort", "nanprod", "nansum",
        "SequenceLast", "SequenceReverse", "_slice_assign", "diag", "repeat",
        # densities of the random distributions (deterministic, but no lowering written)
        "_random_pdf_dirichlet", "_random_pdf_exponential", "_random_pdf_gamma",
        "_random_pdf_generalized_negative_binomial", "_random_pdf_negative_binomial",
        "_random_pdf_normal", "_random_pdf_poisson", "_random_pdf_uniform"),
    _NUMPY: (
        "_np_all", "_np_any", "_np_copy", "_np_diag", "_np_diagonal", "_np_dot", "_np_max", "_np_min",
        "_np_moveaxis", "_np_prod", "_np_reshape", "_np_roll", "_np_squeeze", "_np_sum", "_np_trace",
        "_np_transpose", "_npi_absolute", "_npi_add", "_npi_add_scalar", "_npi_arange", "_npi_arccos",
        "_npi_arccosh", "_npi_arcsin", "_npi_arcsinh", "_npi_arctan", "_npi_arctan2", "_npi_arctan2_scalar",
        "_npi_arctanh", "_npi_argmax", "_npi_argmin", "_npi_bernoulli", "_npi_bitwise_and",
        "_npi_bitwise_and_scalar", "_npi_bitwise_not", "_npi_bitwise_or", "_npi_bitwise_or_scalar",
        "_npi_bitwise_xor", "_npi_bitwise_xor_scalar", "_npi_broadcast_to", "_npi_cbrt", "_npi_ceil",
        "_npi_choice", "_npi_cholesky", "_npi_column_stack", "_npi_concatenate", "_npi_copysign",
        "_npi_copysign_scalar", "_npi_cos", "_npi_cosh", "_npi_degrees", "_npi_dstack", "_npi_eig",
        "_npi_eigh", "_npi_eigvals", "_npi_eigvalsh", "_npi_einsum", "_npi_equal", "_npi_equal_scalar",
        "_npi_exp", "_npi_expm1", "_npi_exponential", "_npi_eye", "_npi_fix", "_npi_flip", "_npi_floor",
        "_npi_full_like", "_npi_gamma", "_npi_greater", "_npi_greater_equal", "_npi_greater_equal_scalar",
        "_npi_greater_scalar", "_npi_gumbel", "_npi_hstack", "_npi_hypot", "_npi_identity", "_npi_isfinite",
        "_npi_isinf", "_npi_isnan", "_npi_isneginf", "_npi_isposinf", "_npi_lcm", "_npi_lcm_scalar",
        "_npi_ldexp", "_npi_ldexp_scalar", "_npi_less", "_npi_less_equal", "_npi_less_equal_scalar",
        "_npi_less_scalar", "_npi_log", "_npi_log10", "_npi_log1p", "_npi_log2", "_npi_logical_not",
        "_npi_logistic", "_npi_matmul", "_npi_mean", "_npi_mod", "_npi_mod_scalar", "_npi_multinomial",
        "_npi_multiply", "_npi_multiply_scalar", "_npi_negative", "_npi_norm", "_npi_normal",
        "_npi_normal_n", "_npi_not_equal", "_npi_not_equal_scalar", "_npi_ones", "_npi_pareto",
        "_npi_pinv_scalar_rcond", "_npi_power", "_npi_power_scalar", "_npi_powerd", "_npi_radians",
        "_npi_rarctan2_scalar", "_npi_rayleigh", "_npi_rcopysign_scalar", "_npi_reciprocal", "_npi_rint",
        "_npi_rldexp_scalar", "_npi_rmod_scalar", "_npi_rpower_scalar", "_npi_rsubtract_scalar",
        "_npi_rtrue_divide_scalar", "_npi_sign", "_npi_sin", "_npi_sinh", "_npi_solve", "_npi_sqrt",
        "_npi_square", "_npi_stack", "_npi_std", "_npi_subtract", "_npi_subtract_scalar", "_npi_svd",
        "_npi_tan", "_npi_tanh", "_npi_tensordot", "_npi_tensordot_int_axes", "_npi_tensorinv",
        "_npi_tensorsolve", "_npi_tril", "_npi_true_divide", "_npi_true_divide_scalar", "_npi_trunc",
        "_npi_uniform", "_npi_uniform_n", "_npi_var", "_npi_vstack", "_npi_weibull", "_npi_where",
        "_npi_where_lscalar", "_npi_where_rscalar", "_npi_where_scalar2", "_npi_zeros",
        "_np_atleast_1d", "_np_atleast_2d", "_np_atleast_3d", "_npi_around", "_npi_array_split",
        "_npi_average", "_npi_boolean_mask_assign_scalar", "_npi_boolean_mask_assign_tensor", "_npi_diff",
        "_npi_mvn_fallback", "_npi_pinv", "_npi_rot90",
        "_npx_constraint_check", "_npx_nonzero", "_npx_relu", "_npx_reshape", "_npx_sigmoid",
        "_npi_pad", "_npi_percentile", "_npi_nan_to_num", "_npi_unique", "_npi_bincount", "_npi_polyval",
        "_npi_ediff1d", "_npi_indices", "_npi_diag_indices_from", "_npi_hanning", "_npi_hamming",
        "_npi_blackman", "_npi_resize_fallback", "_npi_unravel_index_fallback", "_npi_delete",
        "_npi_insert_scalar", "_npi_insert_slice", "_npi_insert_tensor", "_npi_hsplit"),
}

NOT_EXPORTABLE: dict = {name: reason for reason, names in _GROUPS.items() for name in names}
if len(NOT_EXPORTABLE) != sum(len(v) for v in _GROUPS.values()):
    raise ValueError("an operator is listed twice in formats/_onnx_unsupported.py")
