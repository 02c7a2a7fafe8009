#pragma once
// The seed's attention-pooling text classifier is heed::nn::seed::AttentionClassifier
// (heed/nn/seed/attention_classifier.hpp), beside the tutorials' other classes. Its first names,
// in heed::nn, stay as deprecated aliases for one release.

#include "heed/nn/seed/attention_classifier.hpp"

namespace heed::nn {

/// Deprecated: heed::nn::seed::AttentionClassifier.
template <class Scalar = float>
using AttentionClassifier
    [[deprecated("use heed::nn::seed::AttentionClassifier (heed/nn/seed/attention_classifier.hpp)")]] =
        seed::AttentionClassifier<Scalar>;
/// Deprecated: heed::nn::seed::AttentionClassifierOptions.
using AttentionClassifierOptions [[deprecated("use heed::nn::seed::AttentionClassifierOptions")]] =
    seed::AttentionClassifierOptions;
/// Deprecated: heed::nn::seed::ClassifierResult.
template <class Scalar>
using ClassifierResult [[deprecated("use heed::nn::seed::ClassifierResult")]] = seed::ClassifierResult<Scalar>;

}  // namespace heed::nn
