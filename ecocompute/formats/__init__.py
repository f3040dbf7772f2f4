"""formats: the table of weight formats. A format is a precision and the library that
makes it (bitsandbytes NF4 and LLM.int8(); torchao INT4, FP8 and INT8 weight-only); the
table says, for each, its bits, compute dtype, what it needs, whether the graphs regime
captures it and how a report names it. Pure data: no library is imported here (the
code that quantizes lives in llm/quantizers/, one module per library).

May import: precision, errors.
"""
