package tfevents

import (
	"bytes"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

func TestCRC32CCheckValue(t *testing.T) {
	// The standard CRC-32C check value; the mask is TFRecord's.
	if c := crc32.Checksum([]byte("123456789"), castagnoli); c != 0xe3069283 {
		t.Fatalf("crc32c = %#x", c)
	}
	c := uint32(0xe3069283)
	if got, want := maskedCRC([]byte("123456789")), ((c>>15)|(c<<17))+0xa282ead8; got != want {
		t.Fatalf("masked = %#x, want %#x", got, want)
	}
}

// handEvent is Event{wall_time: 1.5, step: 3, summary {value {tag: "loss",
// simple_value: 0.25}}} encoded byte by byte from event.proto's field
// numbers, independent of the encoder under test.
var handEvent = []byte{
	0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, // wall_time (1, fixed64) = 1.5
	0x10, 0x03, // step (2, varint) = 3
	0x2a, 13, // summary (5, bytes)
	0x0a, 11, // value (1, bytes)
	0x0a, 4, 'l', 'o', 's', 's', // tag (1)
	0x15, 0, 0, 0x80, 0x3e, // simple_value (2, fixed32) = 0.25
}

func TestReadScalarsFromFilesTheTestWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.out.tfevents.1700000000.host")
	var buf bytes.Buffer
	// What TensorFlow writes first: an Event with file_version only.
	fileVersion := append([]byte{0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x1a, 13}, "brain.Event:2"...)
	must(t, WriteRecord(&buf, fileVersion))
	must(t, WriteRecord(&buf, handEvent))
	for step := int64(0); step < 5; step++ {
		must(t, WriteScalar(&buf, "acc", step, 100+float64(step), float32(step)/4, true))
		must(t, WriteScalar(&buf, "loss", 10+step, 200, float32(1)/float32(step+1), false))
	}
	// A record cut short at the end, as while TensorFlow is writing.
	var partial bytes.Buffer
	must(t, WriteScalar(&partial, "acc", 99, 1, 1, true))
	buf.Write(partial.Bytes()[:partial.Len()-3])
	must(t, os.WriteFile(path, buf.Bytes(), 0o644))

	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	got, err := ReadScalars(f)
	must(t, err)
	if len(got) != 2 {
		t.Fatalf("tags: %v", got)
	}
	if l := got["loss"]; len(l) != 6 || l[0] != (Scalar{Step: 3, WallTime: 1.5, Value: 0.25}) || l[5].Step != 14 || l[5].Value != float64(float32(1)/5) {
		t.Fatalf("loss = %v", l)
	}
	if a := got["acc"]; len(a) != 5 || a[4] != (Scalar{Step: 4, WallTime: 104, Value: 1}) {
		t.Fatalf("acc = %v (the cut-short record must not be read)", a)
	}
}

func TestReadScalarsCorrupt(t *testing.T) {
	var buf bytes.Buffer
	must(t, WriteScalar(&buf, "a", 1, 1, 1, false))
	must(t, WriteScalar(&buf, "a", 2, 1, 2, false))
	b := buf.Bytes()
	b[len(b)-6] ^= 0xff // inside the second record's payload
	got, err := ReadScalars(bytes.NewReader(b))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	if len(got["a"]) != 1 {
		t.Fatalf("the record before the corruption is kept: %v", got)
	}
	// A huge length is refused before allocating.
	var huge bytes.Buffer
	must(t, WriteRecord(&huge, nil))
	hb := huge.Bytes()
	hb[7] = 0x7f
	if _, err := ReadScalars(bytes.NewReader(hb)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v", err)
	}
}

func TestHalf(t *testing.T) {
	for h, want := range map[uint16]float64{0x3c00: 1, 0xc000: -2, 0x3800: 0.5, 0: 0} {
		if got := halfToFloat(h); got != want {
			t.Errorf("half %#x = %v, want %v", h, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
