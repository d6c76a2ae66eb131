"""specter_utils: a reproduction of SPECTER (Cohan et al., 2020) and its SCIDOCS benchmark.

Modules are layered, and imports flow one way:
``data`` -> ``triplets`` -> ``training`` / ``embedding`` -> ``evaluation`` / ``analysis`` / ``heads``.
"""

__version__ = "0.1.0"
