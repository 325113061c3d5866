// Answer scoring for the evaluation runners, on plain strings: SQuAD-style normalisation (lower
// case, punctuation and articles dropped, whitespace collapsed), exact and contains match, word
// F1, and whether a needle's value appears in an answer as a whole word. No model, no tokenizer:
// agreement is measured on words so that it reads the same for every vocabulary.
#pragma once

#include <string>
#include <vector>

namespace snapkv::eval {

std::string normalize_answer(const std::string& s);
std::vector<std::string> answer_words(const std::string& s);  // words of normalize_answer(s)

// Case-insensitive, exact value, not glued to a letter or digit on either side ("58213" is in
// "The pass key is 58213." but not in "582130").
bool contains_value(const std::string& answer, const std::string& value);
bool exact_match(const std::string& answer, const std::string& reference);     // after normalisation
bool contains_match(const std::string& answer, const std::string& reference);  // normalised, whole words
// Word-multiset F1 in [0, 1]; 1 when both are empty, 0 when only one is.
double word_f1(const std::string& a, const std::string& b);

// RULER's string_match_all: the share of the references found in the answer, each as a
// case-insensitive substring (RULER lower-cases both sides and tests `in`); 0 for no references.
double string_match_all(const std::string& answer, const std::vector<std::string>& references);

// 64-bit FNV-1a, printed as 16 hex digits (identifies a haystack or a question set in settings).
std::string fnv1a_hex(const std::string& bytes);

}  // namespace snapkv::eval
