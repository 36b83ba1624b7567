package argon2id

import (
	"encoding/binary"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/blake2b"
)

// The parts of a one-lane argon2id hash around the memory fill (RFC 9106 §3.2), in Go;
// the fill itself is native (fill_avx2.h). A block is 1 KiB of 128 little-endian words.
const (
	blockSize  = 1024
	syncPoints = 4
	// memoryMin is the least block count of one lane, 2 × syncPoints (RFC 9106 §3.1).
	memoryMin = 2 * syncPoints
)

// laneBlocks is the number of blocks a one-lane hash over memory KiB fills: memory rounded
// down to a multiple of syncPoints, at least memoryMin (RFC 9106 §3.2 step 3).
func laneBlocks(memory uint32) uint32 {
	return max(memory/syncPoints*syncPoints, memoryMin)
}

// firstBlocks writes blocks 0 and 1 of lane 0 into mem (at least 2 KiB): H' over H0 and the
// block's index (RFC 9106 §3.2 steps 1, 4 and 5).
func firstBlocks(mem, password, salt []byte, time, memory, keyLen uint32) {
	h, _ := blake2b.New512(nil)
	var word [4]byte
	put := func(v uint32) {
		binary.LittleEndian.PutUint32(word[:], v)
		h.Write(word[:])
	}
	put(1) // lanes
	put(keyLen)
	put(memory)
	put(time)
	put(argon2.Version)
	put(2) // type: argon2id
	put(uint32(len(password)))
	h.Write(password)
	put(uint32(len(salt)))
	h.Write(salt)
	put(0) // no secret
	put(0) // no associated data
	var h0 [blake2b.Size + 8]byte
	h.Sum(h0[:0])
	for i := range uint32(2) {
		binary.LittleEndian.PutUint32(h0[blake2b.Size:], i)
		binary.LittleEndian.PutUint32(h0[blake2b.Size+4:], 0) // lane
		hashPrime(mem[i*blockSize:(i+1)*blockSize], h0[:])
	}
}

// hashPrime fills out with H'(in), BLAKE2b's variable-length form (RFC 9106 §3.3).
func hashPrime(out, in []byte) {
	var length [4]byte
	binary.LittleEndian.PutUint32(length[:], uint32(len(out)))
	if len(out) <= blake2b.Size {
		h, _ := blake2b.New(len(out), nil)
		h.Write(length[:])
		h.Write(in)
		h.Sum(out[:0])
		return
	}
	h, _ := blake2b.New512(nil)
	h.Write(length[:])
	h.Write(in)
	v := h.Sum(nil)
	r := (len(out)+31)/32 - 2
	copy(out, v[:32])
	for i := 1; i < r; i++ {
		next := blake2b.Sum512(v)
		v = next[:]
		copy(out[32*i:], v[:32])
	}
	last, _ := blake2b.New(len(out)-32*r, nil)
	last.Write(v)
	last.Sum(out[32*r : 32*r])
}
