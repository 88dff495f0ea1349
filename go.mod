module github.com/respire/respire

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/tidwall/redcon v1.6.4
	go.uber.org/goleak v1.3.0
)

require (
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
)
