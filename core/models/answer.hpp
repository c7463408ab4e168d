#pragma once
/// \file
/// One answer about one frame, with its token ids, KV-reuse figures and
/// latency split.

#include <string>
#include <vector>

namespace vlcache {

struct answer {
  std::string question;
  std::string text;
  std::vector<int> ids;
  bool stopped_on_eos = false;
  bool stopped_on_string = false;  ///< a stop string ended it (it is not in `text`)
  bool cancelled = false;          ///< whoever streamed it stopped listening
  bool random_weights = false;  ///< the text came from random weights: not an answer
  int prompt_tokens = 0;
  int image_tokens = 0;
  int image_recomputed = 0;
  int rows_computed = 0;
  bool full_prefill = true;
  double prefill_ms = 0.0;
  double decode_ms = 0.0;
  int batch = 1;  ///< answers computed together (prefill and decode times are the batch's)
};

}  // namespace vlcache
