// The translation unit that builds the tests' precompiled header (GoogleTest and Eigen, the
// two heaviest headers every test parses); tests/CMakeLists.txt reuses it in every test.
int heed_test_pch_anchor = 0;
