// Package tfevents reads the scalar summaries of TensorBoard event files
// (events.out.tfevents.*): the TFRecord framing (length, masked CRC-32C,
// payload, masked CRC-32C) and, inside each record, the tensorflow.Event
// protocol buffer's scalar values, both the TF1 form (Summary.Value.
// simple_value) and the TF2 form (a scalar tensor tagged with the
// "scalars" plugin). It decodes the protobuf wire format by field number
// with protowire, so it needs no generated TensorFlow code. It reads; it
// never writes files (WriteScalar only encodes records, for fixtures).
package tfevents

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Scalar is one point of a scalar series.
type Scalar struct {
	Step     int64   `json:"step"`
	WallTime float64 `json:"wall_time"` // seconds since the epoch
	Value    float64 `json:"value"`
}

// maxRecord bounds one record's length: a corrupt length must not make the
// reader allocate gigabytes.
const maxRecord = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// ErrCorrupt is wrapped by errors about a bad checksum or length.
var ErrCorrupt = errors.New("corrupt TFRecord")

// ReadScalars reads every scalar summary of an event file, by tag, in file
// order. A record cut short at the end (a file still being written) ends
// the read without an error; a bad checksum is an error wrapping
// ErrCorrupt, returned with the scalars read before it.
func ReadScalars(r io.Reader) (map[string][]Scalar, error) {
	out := map[string][]Scalar{}
	br := bufio.NewReaderSize(r, 64<<10)
	var head [12]byte
	var crcBuf [4]byte
	for n := 0; ; n++ {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return out, nil
			}
			return out, err
		}
		length := binary.LittleEndian.Uint64(head[:8])
		if maskedCRC(head[:8]) != binary.LittleEndian.Uint32(head[8:]) {
			return out, fmt.Errorf("record %d: length checksum: %w", n, ErrCorrupt)
		}
		if length > maxRecord {
			return out, fmt.Errorf("record %d: length %d over %d: %w", n, length, maxRecord, ErrCorrupt)
		}
		data, err := readRecord(br, int(length))
		if err != nil {
			return out, nil // cut short: still being written
		}
		if _, err := io.ReadFull(br, crcBuf[:]); err != nil {
			return out, nil
		}
		if maskedCRC(data) != binary.LittleEndian.Uint32(crcBuf[:]) {
			return out, fmt.Errorf("record %d: data checksum: %w", n, ErrCorrupt)
		}
		if err := decodeEvent(data, out); err != nil {
			return out, fmt.Errorf("record %d: %w", n, err)
		}
	}
}

// readRecord reads a record's n bytes. Up to 1 MiB is allocated at once;
// a longer record is read in steps, so a length that checks out but claims
// more than the file holds costs memory in proportion to the bytes there
// (FuzzReadScalars, TestReadScalarsHostileLengthBoundedMemory).
func readRecord(r io.Reader, n int) ([]byte, error) {
	const step = 1 << 20
	if n <= step {
		data := make([]byte, n)
		_, err := io.ReadFull(r, data)
		return data, err
	}
	var b bytes.Buffer
	b.Grow(step)
	got, err := io.Copy(&b, io.LimitReader(r, int64(n)))
	if err == nil && got < int64(n) {
		err = io.ErrUnexpectedEOF
	}
	return b.Bytes(), err
}

// Field numbers of tensorflow/core/util/event.proto and summary.proto.
const (
	eventWallTime = 1
	eventStep     = 2
	eventSummary  = 5

	summaryValue = 1

	valueTag         = 1
	valueSimpleValue = 2
	valueTensor      = 8
	valueMetadata    = 9

	metadataPluginData = 1
	pluginName         = 1

	tensorDtype   = 1
	tensorContent = 4
	tensorFloat   = 5
	tensorDouble  = 6
	tensorHalf    = 13

	dtFloat  = 1
	dtDouble = 2
	dtHalf   = 19
)

// fields calls fn for each field of a protobuf message.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad protobuf tag: %w", ErrCorrupt)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("bad protobuf field %d: %w", num, ErrCorrupt)
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

func decodeEvent(b []byte, out map[string][]Scalar) error {
	var wall float64
	var step int64
	var summaries [][]byte
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			wall = math.Float64frombits(x)
		case num == eventStep && typ == protowire.VarintType:
			step = int64(x)
		case num == eventSummary && typ == protowire.BytesType:
			summaries = append(summaries, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range summaries {
		err := fields(s, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if num != summaryValue || typ != protowire.BytesType {
				return nil
			}
			tag, val, ok, err := decodeValue(v)
			if err != nil || !ok {
				return err
			}
			out[tag] = append(out[tag], Scalar{Step: step, WallTime: wall, Value: val})
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeValue returns a Summary.Value's tag and scalar, ok false when it is
// not a scalar (an image, a histogram, a non-scalar tensor).
func decodeValue(b []byte) (tag string, val float64, ok bool, err error) {
	var simple *float64
	var tensor []byte
	plugin := ""
	err = fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == valueTag && typ == protowire.BytesType:
			tag = string(v)
		case num == valueSimpleValue && typ == protowire.Fixed32Type:
			f := float64(math.Float32frombits(uint32(x)))
			simple = &f
		case num == valueTensor && typ == protowire.BytesType:
			tensor = v
		case num == valueMetadata && typ == protowire.BytesType:
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num == metadataPluginData && typ == protowire.BytesType {
					return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
						if num == pluginName && typ == protowire.BytesType {
							plugin = string(v)
						}
						return nil
					})
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return "", 0, false, err
	}
	if simple != nil {
		return tag, *simple, true, nil
	}
	if tensor != nil && (plugin == "scalars" || plugin == "") {
		v, ok, err := tensorScalar(tensor)
		return tag, v, ok, err
	}
	return "", 0, false, nil
}

// tensorScalar reads a one-element float, double or half tensor.
func tensorScalar(b []byte) (float64, bool, error) {
	dtype := uint64(0)
	var vals []float64
	var content []byte
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch num {
		case tensorDtype:
			dtype = x
		case tensorContent:
			content = v
		case tensorFloat:
			if typ == protowire.Fixed32Type {
				vals = append(vals, float64(math.Float32frombits(uint32(x))))
			} else if typ == protowire.BytesType {
				for len(v) >= 4 {
					vals = append(vals, float64(math.Float32frombits(binary.LittleEndian.Uint32(v))))
					v = v[4:]
				}
			}
		case tensorDouble:
			if typ == protowire.Fixed64Type {
				vals = append(vals, math.Float64frombits(x))
			} else if typ == protowire.BytesType {
				for len(v) >= 8 {
					vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(v)))
					v = v[8:]
				}
			}
		case tensorHalf:
			if typ == protowire.VarintType {
				vals = append(vals, halfToFloat(uint16(x)))
			} else if typ == protowire.BytesType {
				for len(v) > 0 {
					h, n := protowire.ConsumeVarint(v)
					if n < 0 {
						break
					}
					vals = append(vals, halfToFloat(uint16(h)))
					v = v[n:]
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	if len(content) > 0 {
		switch {
		case dtype == dtFloat && len(content) == 4:
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(content))), true, nil
		case dtype == dtDouble && len(content) == 8:
			return math.Float64frombits(binary.LittleEndian.Uint64(content)), true, nil
		case dtype == dtHalf && len(content) == 2:
			return halfToFloat(binary.LittleEndian.Uint16(content)), true, nil
		}
		return 0, false, nil
	}
	if len(vals) == 1 {
		return vals[0], true, nil
	}
	return 0, false, nil
}

func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 31:
		if frac == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// WriteScalar appends one TFRecord holding an Event with one scalar
// summary to w: the TF1 form (simple_value) or, with tensor, the TF2 form
// (a float tensor tagged with the "scalars" plugin). It is how tests and
// fixtures make event files; trialform itself only reads them.
func WriteScalar(w io.Writer, tag string, step int64, wallTime float64, value float32, tensor bool) error {
	var val []byte
	val = protowire.AppendTag(val, valueTag, protowire.BytesType)
	val = protowire.AppendString(val, tag)
	if tensor {
		var plug []byte
		plug = protowire.AppendTag(plug, pluginName, protowire.BytesType)
		plug = protowire.AppendString(plug, "scalars")
		var meta []byte
		meta = protowire.AppendTag(meta, metadataPluginData, protowire.BytesType)
		meta = protowire.AppendBytes(meta, plug)
		var t []byte
		t = protowire.AppendTag(t, tensorDtype, protowire.VarintType)
		t = protowire.AppendVarint(t, dtFloat)
		var c [4]byte
		binary.LittleEndian.PutUint32(c[:], math.Float32bits(value))
		t = protowire.AppendTag(t, tensorContent, protowire.BytesType)
		t = protowire.AppendBytes(t, c[:])
		val = protowire.AppendTag(val, valueMetadata, protowire.BytesType)
		val = protowire.AppendBytes(val, meta)
		val = protowire.AppendTag(val, valueTensor, protowire.BytesType)
		val = protowire.AppendBytes(val, t)
	} else {
		val = protowire.AppendTag(val, valueSimpleValue, protowire.Fixed32Type)
		val = protowire.AppendFixed32(val, math.Float32bits(value))
	}
	var sum []byte
	sum = protowire.AppendTag(sum, summaryValue, protowire.BytesType)
	sum = protowire.AppendBytes(sum, val)
	var ev []byte
	ev = protowire.AppendTag(ev, eventWallTime, protowire.Fixed64Type)
	ev = protowire.AppendFixed64(ev, math.Float64bits(wallTime))
	ev = protowire.AppendTag(ev, eventStep, protowire.VarintType)
	ev = protowire.AppendVarint(ev, uint64(step))
	ev = protowire.AppendTag(ev, eventSummary, protowire.BytesType)
	ev = protowire.AppendBytes(ev, sum)
	return WriteRecord(w, ev)
}

// WriteRecord appends one TFRecord framing data.
func WriteRecord(w io.Writer, data []byte) error {
	var head [12]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(head[8:], maskedCRC(head[:8]))
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], maskedCRC(data))
	for _, b := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
