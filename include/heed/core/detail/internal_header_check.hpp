// Every header under a detail/ folder includes this first. heed's internals are reached only
// through the public headers, each of which defines HEED_INTERNAL_HEADER_ALLOWED before it
// includes a detail header (the same guard as Eigen's InternalHeaderCheck.h).
#ifndef HEED_INTERNAL_HEADER_ALLOWED
#error "heed: headers under heed/<layer>/detail/ are internal; include a public header (e.g. <heed/heed.hpp>) instead"
#endif
