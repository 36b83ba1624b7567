// The memory fill of argon2id (RFC 9106 §3.2-3.4) for one lane, version 0x13, with AVX2.
// Everything else of the hash (H0, the first two blocks, the tag) is computed in Go
// (native.go); this is the part that costs: t passes of m blocks, each a BlaMka compression.
// Written from RFC 9106; the vectorisation is the usual one of BLAKE2b on AVX2 (one
// permutation P in four 256-bit registers, diagonals by rotating lanes).

#include <stdint.h>
#include <string.h>
#include <immintrin.h>

#define GH_QWORDS 128 /* 64-bit words in a 1 KiB block */
#define GH_ADDRESSES_PER_BLOCK 128
#define GH_SYNC_POINTS 4
#define GH_TYPE_ID 2 /* argon2id */

typedef struct { uint64_t v[GH_QWORDS]; } gh_block;

/* fBlaMka(x, y) = x + y + 2 * lo32(x) * lo32(y), on four lanes. */
__attribute__((target("avx2"))) static inline __m256i gh_blamka(__m256i x, __m256i y) {
	__m256i xy = _mm256_mul_epu32(x, y);
	return _mm256_add_epi64(_mm256_add_epi64(x, y), _mm256_add_epi64(xy, xy));
}

__attribute__((target("avx2"))) static inline __m256i gh_rotr32(__m256i x) {
	return _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1));
}
__attribute__((target("avx2"))) static inline __m256i gh_rotr24(__m256i x) {
	const __m256i r24 = _mm256_setr_epi8(3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10,
		3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10);
	return _mm256_shuffle_epi8(x, r24);
}
__attribute__((target("avx2"))) static inline __m256i gh_rotr16(__m256i x) {
	const __m256i r16 = _mm256_setr_epi8(2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9,
		2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9);
	return _mm256_shuffle_epi8(x, r16);
}
__attribute__((target("avx2"))) static inline __m256i gh_rotr63(__m256i x) {
	return _mm256_xor_si256(_mm256_srli_epi64(x, 63), _mm256_add_epi64(x, x));
}

/* GB on four columns at once (RFC 9106 §3.6). */
#define GH_G(a, b, c, d) do { \
	a = gh_blamka(a, b); d = gh_rotr32(_mm256_xor_si256(d, a)); \
	c = gh_blamka(c, d); b = gh_rotr24(_mm256_xor_si256(b, c)); \
	a = gh_blamka(a, b); d = gh_rotr16(_mm256_xor_si256(d, a)); \
	c = gh_blamka(c, d); b = gh_rotr63(_mm256_xor_si256(b, c)); \
} while (0)

/* The permutation P on sixteen words v0..v15 held as a = v0..v3, b = v4..v7, c = v8..v11,
 * d = v12..v15: GB on the columns, then on the diagonals, which rotating b, c and d by one,
 * two and three lanes turns into columns. */
#define GH_P(a, b, c, d) do { \
	GH_G(a, b, c, d); \
	b = _mm256_permute4x64_epi64(b, _MM_SHUFFLE(0, 3, 2, 1)); \
	c = _mm256_permute4x64_epi64(c, _MM_SHUFFLE(1, 0, 3, 2)); \
	d = _mm256_permute4x64_epi64(d, _MM_SHUFFLE(2, 1, 0, 3)); \
	GH_G(a, b, c, d); \
	b = _mm256_permute4x64_epi64(b, _MM_SHUFFLE(2, 1, 0, 3)); \
	c = _mm256_permute4x64_epi64(c, _MM_SHUFFLE(1, 0, 3, 2)); \
	d = _mm256_permute4x64_epi64(d, _MM_SHUFFLE(0, 3, 2, 1)); \
} while (0)

/* Two 16-byte pieces of a block, words i, i+1 and j, j+1, as one register. */
#define GH_LOAD2(r, i, j) _mm256_inserti128_si256(_mm256_castsi128_si256( \
	_mm_loadu_si128((const __m128i *)&(r)->v[i])), _mm_loadu_si128((const __m128i *)&(r)->v[j]), 1)
#define GH_STORE2(r, i, j, x) do { \
	_mm_storeu_si128((__m128i *)&(r)->v[i], _mm256_castsi256_si128(x)); \
	_mm_storeu_si128((__m128i *)&(r)->v[j], _mm256_extracti128_si256(x, 1)); \
} while (0)

/* next = G(prev, ref), XORed into next's old value when with_xor (passes after the first,
 * version 0x13): R = prev ^ ref; Z = P on R's rows, then on its columns; result Z ^ R (^ the
 * old next). The row pass reads all of prev, ref and the old next before the column pass
 * writes next, so next may be ref (the address blocks are computed in place). */
__attribute__((target("avx2"))) static void gh_fill_block(const gh_block *prev, const gh_block *ref,
		gh_block *next, int with_xor) {
	gh_block r __attribute__((aligned(32)));
	gh_block keep __attribute__((aligned(32))); /* R, or R ^ the old next */
	/* Rows: words 16i .. 16i+15. */
	for (int i = 0; i < 8; i++) {
		const int w = 16 * i;
		__m256i a = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)&prev->v[w]),
			_mm256_loadu_si256((const __m256i *)&ref->v[w]));
		__m256i b = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)&prev->v[w + 4]),
			_mm256_loadu_si256((const __m256i *)&ref->v[w + 4]));
		__m256i c = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)&prev->v[w + 8]),
			_mm256_loadu_si256((const __m256i *)&ref->v[w + 8]));
		__m256i d = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)&prev->v[w + 12]),
			_mm256_loadu_si256((const __m256i *)&ref->v[w + 12]));
		if (with_xor) {
			_mm256_store_si256((__m256i *)&keep.v[w], _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *)&next->v[w])));
			_mm256_store_si256((__m256i *)&keep.v[w + 4], _mm256_xor_si256(b, _mm256_loadu_si256((const __m256i *)&next->v[w + 4])));
			_mm256_store_si256((__m256i *)&keep.v[w + 8], _mm256_xor_si256(c, _mm256_loadu_si256((const __m256i *)&next->v[w + 8])));
			_mm256_store_si256((__m256i *)&keep.v[w + 12], _mm256_xor_si256(d, _mm256_loadu_si256((const __m256i *)&next->v[w + 12])));
		} else {
			_mm256_store_si256((__m256i *)&keep.v[w], a);
			_mm256_store_si256((__m256i *)&keep.v[w + 4], b);
			_mm256_store_si256((__m256i *)&keep.v[w + 8], c);
			_mm256_store_si256((__m256i *)&keep.v[w + 12], d);
		}
		GH_P(a, b, c, d);
		_mm256_store_si256((__m256i *)&r.v[w], a);
		_mm256_store_si256((__m256i *)&r.v[w + 4], b);
		_mm256_store_si256((__m256i *)&r.v[w + 8], c);
		_mm256_store_si256((__m256i *)&r.v[w + 12], d);
	}
	/* Columns: words 2i, 2i+1, 2i+16, 2i+17, ..., 2i+112, 2i+113; the result, XORed with
	 * keep, goes straight to next. */
	for (int i = 0; i < 8; i++) {
		const int w = 2 * i;
		__m256i a = GH_LOAD2(&r, w, w + 16), b = GH_LOAD2(&r, w + 32, w + 48),
			c = GH_LOAD2(&r, w + 64, w + 80), d = GH_LOAD2(&r, w + 96, w + 112);
		GH_P(a, b, c, d);
		GH_STORE2(next, w, w + 16, _mm256_xor_si256(a, GH_LOAD2(&keep, w, w + 16)));
		GH_STORE2(next, w + 32, w + 48, _mm256_xor_si256(b, GH_LOAD2(&keep, w + 32, w + 48)));
		GH_STORE2(next, w + 64, w + 80, _mm256_xor_si256(c, GH_LOAD2(&keep, w + 64, w + 80)));
		GH_STORE2(next, w + 96, w + 112, _mm256_xor_si256(d, GH_LOAD2(&keep, w + 96, w + 112)));
	}
}

/* The next 128 pseudo-random words of data-independent addressing (RFC 9106 §3.4.1.2):
 * address = G(0, G(0, input)) with input's counter advanced first. */
__attribute__((target("avx2"))) static void gh_next_addresses(gh_block *address, gh_block *input) {
	gh_block zero;
	memset(&zero, 0, sizeof zero);
	input->v[6]++;
	gh_fill_block(&zero, input, address, 0);
	gh_fill_block(&zero, address, address, 0);
}

/* gh_argon2id_fill fills blocks[2 .. m-1] of pass 0 and every block of passes 1 .. t-1 of a
 * one-lane argon2id hash, blocks[0] and blocks[1] being set by the caller from H0. m is the
 * block count after rounding (a multiple of 4, at least 8); m_cost and t are the caller's
 * parameters, which the address blocks carry. */
__attribute__((target("avx2"))) static void gh_argon2id_fill(gh_block *blocks, uint32_t m, uint32_t t) {
	const uint32_t segment = m / GH_SYNC_POINTS;
	gh_block address, input;
	for (uint32_t pass = 0; pass < t; pass++) {
		for (uint32_t slice = 0; slice < GH_SYNC_POINTS; slice++) {
			const int independent = pass == 0 && slice < GH_SYNC_POINTS / 2;
			uint32_t start = 0;
			if (independent) {
				memset(&input, 0, sizeof input);
				input.v[0] = pass;
				input.v[1] = 0; /* lane */
				input.v[2] = slice;
				input.v[3] = m;
				input.v[4] = t;
				input.v[5] = GH_TYPE_ID;
			}
			if (pass == 0 && slice == 0) {
				start = 2;
				if (independent) {
					gh_next_addresses(&address, &input);
				}
			}
			uint32_t curr = slice * segment + start;
			uint32_t prev = curr == 0 ? m - 1 : curr - 1;
			for (uint32_t i = start; i < segment; i++, curr++, prev = curr - 1) {
				uint64_t rand;
				if (independent) {
					if (i % GH_ADDRESSES_PER_BLOCK == 0) {
						gh_next_addresses(&address, &input);
					}
					rand = address.v[i % GH_ADDRESSES_PER_BLOCK];
				} else {
					rand = blocks[prev].v[0];
				}
				/* The reference set (RFC 9106 §3.4.2), one lane: every block already
				 * written in this pass, or the last three slices' in later passes,
				 * without the previous block. */
				uint64_t area;
				if (pass == 0) {
					area = (uint64_t)slice * segment + i - 1;
				} else {
					area = (uint64_t)m - segment + i - 1;
				}
				uint64_t x = rand & 0xFFFFFFFFu;
				x = (x * x) >> 32;
				uint64_t rel = area - 1 - ((area * x) >> 32);
				uint64_t begin = 0;
				if (pass != 0 && slice != GH_SYNC_POINTS - 1) {
					begin = (uint64_t)(slice + 1) * segment;
				}
				uint32_t ref = (uint32_t)((begin + rel) % m);
				gh_fill_block(&blocks[prev], &blocks[ref], &blocks[curr], pass != 0);
			}
		}
	}
}
