let g:llama_config = {'endpoint_fim': 'http://127.0.0.1:18765/infill', 'ring_update_ms': 300, 'show_info': 2}
set rtp+=/tmp/llamavim
runtime plugin/llama.vim
edit other.py
normal! ggyG
edit circle.py
sleep 1500m
call cursor(10, 12)
startinsert!
call timer_start(1500, {-> llama#fim(-1, -1, v:false, [], v:false)})
call timer_start(2700, {-> llama#fim(11, 10, v:true, ['2 * math.pi * r'], v:true)})
call timer_start(4000, {-> execute('call cursor(16, 5) | call llama#fim(-1, -1, v:false, [], v:false)')})
call timer_start(6500, {-> execute('qa!')})
