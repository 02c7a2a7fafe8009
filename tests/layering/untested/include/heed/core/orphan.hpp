#pragma once
// A public header planted without a test, for layering/detects_an_untested_header.
