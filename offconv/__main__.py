from offconv.launch import main

main()
