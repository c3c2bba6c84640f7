package tfevents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"runtime"
	"testing"

	"github.com/trialform/trialform/internal/fuzzseed"
)

// FuzzReadScalars feeds ReadScalars event files it did not write. With
// framed, data is one record's payload (an Event), framed with the right
// checksums so the fuzzer reaches the protobuf decoding behind them; else
// data is the whole file. Then a scalar written by WriteScalar from the
// other arguments is appended to a framed file and must read back
// unchanged when the file before it read without error.
//
// Properties: no panic; an error is ErrCorrupt (a bytes.Reader cannot
// fail); every cut of the file reads without error or with ErrCorrupt,
// and what a cut reads is a prefix of what the whole file reads (a file
// being written is read as far as it goes); the appended scalar reads
// back.
func FuzzReadScalars(f *testing.F) {
	f.Add(handEvent, true, "loss", int64(3), 1.5, float32(0.25), false)
	f.Add([]byte{}, false, "acc", int64(-1), math.NaN(), float32(math.Inf(1)), true)
	f.Fuzz(func(t *testing.T, data []byte, framed bool, tag string, step int64, wall float64, value float32, tensor bool) {
		file := data
		if framed {
			var b bytes.Buffer
			if err := WriteRecord(&b, data); err != nil {
				t.Fatal(err)
			}
			file = b.Bytes()
		}
		whole, err := ReadScalars(bytes.NewReader(file))
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error not ErrCorrupt: %v", err)
		}
		for _, cut := range []int{len(file) / 2, len(file) - 1, 12, 13} {
			if cut < 0 || cut >= len(file) {
				continue
			}
			part, perr := ReadScalars(bytes.NewReader(file[:cut]))
			if perr != nil && !errors.Is(perr, ErrCorrupt) {
				t.Fatalf("cut at %d: error not ErrCorrupt: %v", cut, perr)
			}
			if err == nil && perr != nil {
				t.Fatalf("cut at %d of a good file: %v", cut, perr)
			}
			if err == nil && !isPrefix(part, whole) {
				t.Fatalf("cut at %d reads %v, not a prefix of %v", cut, part, whole)
			}
		}
		if err != nil || !framed {
			return // only a framed file is known to end at a record boundary
		}
		var b bytes.Buffer
		b.Write(file)
		if err := WriteScalar(&b, tag, step, wall, value, tensor); err != nil {
			t.Fatal(err)
		}
		got, err := ReadScalars(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("with a scalar appended: %v", err)
		}
		series := got[tag]
		if len(series) != len(whole[tag])+1 {
			t.Fatalf("tag %q: %d scalars after appending one to %d", tag, len(series), len(whole[tag]))
		}
		last := series[len(series)-1]
		want := Scalar{Step: step, WallTime: wall, Value: float64(value)}
		if !sameScalar(last, want) {
			t.Fatalf("appended %+v, read back %+v", want, last)
		}
	})
}

func sameScalar(a, b Scalar) bool {
	return a.Step == b.Step && math.Float64bits(a.WallTime) == math.Float64bits(b.WallTime) &&
		(math.Float64bits(a.Value) == math.Float64bits(b.Value) || (math.IsNaN(a.Value) && math.IsNaN(b.Value)))
}

func isPrefix(part, whole map[string][]Scalar) bool {
	for tag, ps := range part {
		ws := whole[tag]
		if len(ps) > len(ws) {
			return false
		}
		for i := range ps {
			if !sameScalar(ps[i], ws[i]) {
				return false
			}
		}
	}
	return true
}

// A header whose length checks out but claims far more than the file
// holds (a hostile or truncated file) costs memory in proportion to the
// bytes that are there, not to the length claimed.
func TestReadScalarsHostileLengthBoundedMemory(t *testing.T) {
	var head [12]byte
	binary.LittleEndian.PutUint64(head[:8], maxRecord) // 64 MiB claimed
	binary.LittleEndian.PutUint32(head[8:], maskedCRC(head[:8]))
	file := append(head[:], make([]byte, 100)...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 4 {
		got, err := ReadScalars(bytes.NewReader(file))
		if err != nil || len(got) != 0 {
			t.Fatalf("got %v, %v; want nothing read, no error (a record cut short)", got, err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 12<<20 {
		t.Fatalf("4 reads of a %d-byte file claiming a %d-byte record allocated %d bytes", len(file), maxRecord, n)
	}
}

// TestWriteFuzzSeeds writes FuzzReadScalars's seed corpus (run with
// TRIALFORM_WRITE_SEEDS=1): real-shaped files and payloads, and hostile
// lengths and protobuf.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("TRIALFORM_WRITE_SEEDS") != "1" {
		t.Skip("TRIALFORM_WRITE_SEEDS=1 writes the seed corpus")
	}
	fileVersion := append([]byte{0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x1a, 13}, "brain.Event:2"...)
	var real bytes.Buffer
	must(t, WriteRecord(&real, fileVersion))
	must(t, WriteRecord(&real, handEvent))
	for step := int64(0); step < 3; step++ {
		must(t, WriteScalar(&real, "acc", step, 100+float64(step), float32(step)/4, true))
		must(t, WriteScalar(&real, "loss", step, 200, 1/float32(step+1), false))
	}
	var tf2 bytes.Buffer
	must(t, WriteScalar(&tf2, "acc", 7, 1.7e9, 0.5, true))
	payload := func(rec []byte) []byte { return rec[12 : len(rec)-4] }
	var hostile [12]byte
	binary.LittleEndian.PutUint64(hostile[:8], maxRecord)
	binary.LittleEndian.PutUint32(hostile[8:], maskedCRC(hostile[:8]))
	var tooLong [12]byte
	binary.LittleEndian.PutUint64(tooLong[:8], 1<<62)
	binary.LittleEndian.PutUint32(tooLong[8:], maskedCRC(tooLong[:8]))
	// A half tensor as packed varints, a double tensor, a 2-element tensor.
	half := []byte{0x0a, 3, 'h', 'l', 'f', 0x42, 6, 0x08, dtHalf, 0x6a, 2, 0x80, 0x78}
	dbl := []byte{0x0a, 1, 'd', 0x42, 11, 0x08, dtDouble, 0x31, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}
	event := func(val []byte) []byte {
		sum := append([]byte{0x0a, byte(len(val))}, val...)
		return append([]byte{0x10, 0x05, 0x2a, byte(len(sum))}, sum...)
	}
	seeds := []struct {
		name   string
		data   []byte
		framed bool
	}{
		{"real-file", real.Bytes(), false},
		{"real-file-cut", real.Bytes()[:real.Len()-5], false},
		{"hand-event", handEvent, true},
		{"tf2-tensor", payload(tf2.Bytes()), true},
		{"file-version", fileVersion, true},
		{"half-tensor", event(half), true},
		{"double-tensor", event(dbl), true},
		{"hostile-length-64MiB", hostile[:], false},
		{"hostile-length-huge", tooLong[:], false},
		{"bad-length-crc", []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0}, false},
		{"varint-overflow", []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, true},
		{"bytes-length-past-end", []byte{0x2a, 0x7f, 0x0a}, true},
		{"deep-groups", bytes.Repeat([]byte{0x0b}, 200), true},
		{"empty", nil, false},
	}
	for _, s := range seeds {
		if err := fuzzseed.Write("FuzzReadScalars", s.name, s.data, s.framed, "loss", int64(1), 1.7e9, float32(0.5), false); err != nil {
			t.Fatal(err)
		}
	}
}
