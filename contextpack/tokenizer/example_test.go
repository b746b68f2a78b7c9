package tokenizer_test

import (
	"fmt"

	"github.com/infill-dev/infill/contextpack/tokenizer"
)

func Example() {
	tk, err := tokenizer.Qwen25()
	if err != nil {
		panic(err)
	}
	ids := tk.Encode("def add(a, b):\n    return a + b\n")
	fmt.Println(len(ids), tk.Count("def add(a, b):\n    return a + b\n"))
	fmt.Printf("%q\n", tk.Decode(ids))
	// Output:
	// 12 12
	// "def add(a, b):\n    return a + b\n"
}

func ExampleNeutralize() {
	tk, _ := tokenizer.Qwen25()
	code := `s = "<|endoftext|>"`
	fmt.Println(tk.EncodeWithSpecial(code)) // the literal becomes control token 151643
	safe := tokenizer.Neutralize(code)
	fmt.Printf("%+q %v\n", safe, tokenizer.ContainsSpecial(safe))
	fmt.Println(tokenizer.Restore(safe) == code)
	// Output:
	// [82 284 330 151643 1]
	// "s = \"<\u200b|endoftext|>\"" false
	// true
}

func ExampleSpecialID() {
	id, ok := tokenizer.SpecialID("<|fim_middle|>")
	fmt.Println(id, ok, id == tokenizer.FimMiddle)
	// Output: 151660 true true
}
