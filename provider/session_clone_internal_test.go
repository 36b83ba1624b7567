package provider

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// TestSessionCloneCopiesEveryField fills every field of a Session, fosite's embedded session
// and unexported fields included, down through its pointers, maps, slices and claim values,
// then checks that Clone returns an equal value that shares no memory with it: no pointer,
// map or slice of the clone is the original's. A field added to Session (or to fosite's
// session by an upgrade) that Clone does not copy fails here: left out, it is zero in the
// clone; copied shallowly, it is shared. A field of a kind fill does not know fails too,
// so that the test is extended with it.
func TestSessionCloneCopiesEveryField(t *testing.T) {
	orig := &Session{}
	fill(t, reflect.ValueOf(orig).Elem(), "Session")
	clone, ok := orig.Clone().(*Session)
	if !ok {
		t.Fatalf("Clone returned %T, want *Session", orig.Clone())
	}
	if !reflect.DeepEqual(orig, clone) {
		t.Fatalf("the clone differs from the original:\norig  %+v\nclone %+v", orig, clone)
	}
	shareNothing(t, reflect.ValueOf(orig), reflect.ValueOf(clone), "Session")

	if (*Session)(nil).Clone() != nil {
		t.Error("a nil session's clone is not nil")
	}
	empty := newSession()
	if c := empty.Clone().(*Session); !reflect.DeepEqual(c, empty) {
		t.Errorf("an empty session's clone = %+v, want %+v (nil maps and slices stay nil)", c, empty)
	}
}

// BenchmarkSessionClone clones a session as fosite does for every token request.
func BenchmarkSessionClone(b *testing.B) {
	s := &Session{}
	fill(b, reflect.ValueOf(s).Elem(), "Session")
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Clone()
	}
}

// settable returns v writable, unexported fields included.
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

var timeType = reflect.TypeFor[time.Time]()

// fill sets v, addressable, to a value with nothing zero in it: every field, element and
// entry set, each pointer, map and slice allocated, interfaces holding nested JSON values.
func fill(t testing.TB, v reflect.Value, path string) {
	t.Helper()
	v = settable(v)
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2026, 11, 28, 3, 4, 5, 6000, time.UTC)))
		return
	}
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.SetBytes([]byte(`{"raw":true}`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("value of " + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		key, elem := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, key, path+"[key]")
		fill(t, elem, path+"[elem]")
		m.SetMapIndex(key, elem)
		v.Set(m)
	case reflect.Interface:
		// A claim value as JSON decodes it: a map holding an array holding a map, so that a
		// shallow copy anywhere shows.
		v.Set(reflect.ValueOf(map[string]any{"nested": []any{map[string]any{"leaf": path}, "text"}}))
	default:
		t.Fatalf("%s: fill does not know kind %s; extend it (and Clone) for this field", path, v.Kind())
	}
}

// shareNothing fails t where clone holds a pointer, map or slice that orig holds too.
func shareNothing(t testing.TB, orig, clone reflect.Value, path string) {
	t.Helper()
	if orig.Kind() != clone.Kind() {
		t.Errorf("%s: kind %s in the original, %s in the clone", path, orig.Kind(), clone.Kind())
		return
	}
	switch orig.Kind() {
	case reflect.Pointer:
		if orig.IsNil() || clone.IsNil() {
			return
		}
		if orig.Pointer() == clone.Pointer() {
			t.Errorf("%s: the clone shares the original's pointer", path)
			return
		}
		shareNothing(t, orig.Elem(), clone.Elem(), path)
	case reflect.Interface:
		if !orig.IsNil() && !clone.IsNil() {
			shareNothing(t, orig.Elem(), clone.Elem(), path)
		}
	case reflect.Struct:
		for i := range orig.NumField() {
			shareNothing(t, orig.Field(i), clone.Field(i), path+"."+orig.Type().Field(i).Name)
		}
	case reflect.Slice:
		if orig.Len() == 0 || clone.Len() == 0 {
			return
		}
		if orig.Pointer() == clone.Pointer() {
			t.Errorf("%s: the clone shares the original's slice", path)
			return
		}
		for i := range min(orig.Len(), clone.Len()) {
			shareNothing(t, orig.Index(i), clone.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if orig.IsNil() || clone.IsNil() {
			return
		}
		if orig.Pointer() == clone.Pointer() {
			t.Errorf("%s: the clone shares the original's map", path)
			return
		}
		for _, k := range orig.MapKeys() {
			if e := clone.MapIndex(k); e.IsValid() {
				shareNothing(t, orig.MapIndex(k), e, fmt.Sprintf("%s[%v]", path, k))
			}
		}
	}
}
