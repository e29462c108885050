package events

import "github.com/locktui/locktui/provider"

// Tee returns an Observer that passes every event to each of observers in order; nil observers
// are skipped. With no observer left it returns nil, which the provider treats as "no observer".
// Each observer must itself be non-blocking.
func Tee(observers ...provider.Observer) provider.Observer {
	var list tee
	for _, o := range observers {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type tee []provider.Observer

func (t tee) LockEvent(e provider.Event) {
	for _, o := range t {
		o.LockEvent(e)
	}
}
