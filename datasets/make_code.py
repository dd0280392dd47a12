#!/usr/bin/env python3
"""Writes code.jsonl: small Python functions, each with unit tests and scripted drafts that go
from broken to fixed, for the execution critic (plugins/python-example/execution_critic.py).

Each task's `meta.tests` holds `test_*` functions; `drafts` are what the scripted backend returns
round by round (round k uses drafts[min(k, len-1)]): the first is wrong (failing tests, a syntax
error, a crash on load or an endless loop), the last passes every test.

Run: python3 datasets/make_code.py  (deterministic: same file every time)
"""

import json
import os

TASKS = [
    {
        "id": "code-fizzbuzz",
        "function": "fizzbuzz",
        "prompt": "Write fizzbuzz(n): the list of strings for 1..n, with Fizz for multiples of 3, "
        "Buzz for multiples of 5 and FizzBuzz for multiples of both.",
        "tests": '''
def test_small():
    assert fizzbuzz(5) == ["1", "2", "Fizz", "4", "Buzz"]

def test_fifteen():
    assert fizzbuzz(15)[-1] == "FizzBuzz", fizzbuzz(15)[-1]

def test_empty():
    assert fizzbuzz(0) == []
''',
        "drafts": [
            '''def fizzbuzz(n):
    out = []
    for i in range(1, n + 1):
        if i % 3 == 0:
            out.append("Fizz")
        elif i % 5 == 0:
            out.append("Buzz")
        elif i % 15 == 0:
            out.append("FizzBuzz")
        else:
            out.append(str(i))
    return out
''',
            '''def fizzbuzz(n):
    out = []
    for i in range(1, n + 1):
        if i % 15 == 0:
            out.append("FizzBuzz")
        elif i % 3 == 0:
            out.append("Fizz")
        elif i % 5 == 0:
            out.append("Buzz")
        else:
            out.append(str(i))
    return out
''',
        ],
    },
    {
        "id": "code-palindrome",
        "function": "is_palindrome",
        "prompt": "Write is_palindrome(s): whether s reads the same backwards, ignoring case, spaces "
        "and punctuation.",
        "tests": '''
def test_plain():
    assert is_palindrome("level")

def test_case_and_punctuation():
    assert is_palindrome("A man, a plan, a canal: Panama")

def test_not():
    assert not is_palindrome("critique")
''',
        "drafts": [
            '''def is_palindrome(s):
    return s == s[::-1]
''',
            '''def is_palindrome(s):
    kept = [c.lower() for c in s if c.isalnum()]
    return kept == kept[::-1]
''',
        ],
    },
    {
        "id": "code-median",
        "function": "median",
        "prompt": "Write median(xs): the median of a non-empty list of numbers (the mean of the two "
        "middle values when the length is even).",
        "tests": '''
def test_odd():
    assert median([3, 1, 2]) == 2

def test_even():
    assert median([4, 1, 3, 2]) == 2.5, median([4, 1, 3, 2])

def test_unsorted_input_is_not_changed():
    xs = [3, 1, 2]
    median(xs)
    assert xs == [3, 1, 2]
''',
        "drafts": [
            '''def median(xs):
    xs.sort()
    return xs[len(xs) // 2]
''',
            '''def median(xs):
    ys = sorted(xs)
    middle = len(ys) // 2
    if len(ys) % 2:
        return ys[middle]
    return (ys[middle - 1] + ys[middle]) / 2
''',
        ],
    },
    {
        "id": "code-word-count",
        "function": "word_count",
        "prompt": "Write word_count(text): a dict from each lower-cased word to how often it occurs; "
        "words are runs of letters.",
        "tests": '''
def test_counts():
    assert word_count("the cat and the hat") == {"the": 2, "cat": 1, "and": 1, "hat": 1}

def test_case_is_ignored():
    assert word_count("Dog dog DOG") == {"dog": 3}, word_count("Dog dog DOG")

def test_punctuation_is_not_a_word():
    assert word_count("yes, no; yes!") == {"yes": 2, "no": 1}
''',
        "drafts": [
            '''def word_count(text)
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts
''',
            '''import re

def word_count(text):
    counts = {}
    for word in re.findall(r"[A-Za-z]+", text):
        counts[word] = counts.get(word, 0) + 1
    return counts
''',
            '''import re

def word_count(text):
    counts = {}
    for word in re.findall(r"[a-z]+", text.lower()):
        counts[word] = counts.get(word, 0) + 1
    return counts
''',
        ],
    },
    {
        "id": "code-binary-search",
        "function": "binary_search",
        "prompt": "Write binary_search(xs, target): the index of target in the sorted list xs, or -1.",
        "tests": '''
def test_found():
    assert binary_search([1, 3, 5, 7, 9], 7) == 3

def test_missing():
    assert binary_search([1, 3, 5, 7, 9], 4) == -1

def test_empty():
    assert binary_search([], 1) == -1
''',
        "drafts": [
            '''def binary_search(xs, target):
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        if xs[mid] < target:
            lo = mid
        else:
            hi = mid
    return -1
''',
            '''def binary_search(xs, target):
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        if xs[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
''',
        ],
    },
    {
        "id": "code-flatten",
        "function": "flatten",
        "prompt": "Write flatten(nested): the items of arbitrarily nested lists, in order, as one "
        "flat list. Answer with the code in a ```python block.",
        "tests": '''
def test_one_level():
    assert flatten([1, [2, 3], 4]) == [1, 2, 3, 4]

def test_deep():
    assert flatten([1, [2, [3, [4]]]]) == [1, 2, 3, 4], flatten([1, [2, [3, [4]]]])
''',
        "drafts": [
            '''Here is the function:

```python
OUTPUT = []

def flatten(nested):
    for item in nested:
        OUTPUT.extend(item if isinstance(item, list) else [item])
    return OUTPUT

flatten(undefined_name)
```
''',
            '''Here is the function:

```python
def flatten(nested):
    out = []
    for item in nested:
        out.extend(item if isinstance(item, list) else [item])
    return out
```
''',
            '''Here is the function, now recursive:

```python
def flatten(nested):
    out = []
    for item in nested:
        if isinstance(item, list):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out
```
''',
        ],
    },
]


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "code.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for task in TASKS:
            row = {
                "id": task["id"],
                "prompt": task["prompt"],
                "kind": "code",
                "drafts": task["drafts"],
                "meta": {"function": task["function"], "tests": task["tests"].lstrip("\n")},
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print("wrote %s (%d tasks)" % (path, len(TASKS)))


if __name__ == "__main__":
    main()
